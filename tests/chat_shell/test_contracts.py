"""Wire models: the event union, secrets, aliases."""

from __future__ import annotations

import json

from pydantic import SecretStr

from chat_shell.contracts import (
    DoneEvent,
    EventAdapter,
    LoadedSkill,
    ModelSettings,
    SkillSpec,
    SubstitutionContext,
    TokenEvent,
    ToolEndEvent,
    TurnRequest,
    Usage,
)


def test_events_round_trip_through_json_by_their_type() -> None:
    events = [
        TokenEvent(delta="hi"),
        ToolEndEvent(id="1", name="t", result="r", duration_ms=1.5),
        DoneEvent(
            text="ok",
            loaded_skills=[LoadedSkill(name="pdf", last_used_turn=3)],
            usage=Usage(prompt_tokens=1, completion_tokens=2),
        ),
    ]

    for event in events:
        data = json.loads(EventAdapter.dump_json(event))
        assert EventAdapter.validate_python(data) == event
    assert json.loads(EventAdapter.dump_json(events[1]))["type"] == "tool_end"


def test_secrets_never_appear_in_dumps() -> None:
    turn = TurnRequest(
        conversation_id="c",
        user_id=1,
        user_message="hi",
        model=ModelSettings(name="m", api_key=SecretStr("sk-very-secret")),
        context=SubstitutionContext(secrets={"TOKEN": SecretStr("tok-very-secret")}),
    )

    dumped = turn.model_dump_json() + repr(turn)

    assert "very-secret" not in dumped


def test_skill_specs_take_the_provider_class_under_its_yaml_name() -> None:
    spec = SkillSpec.model_validate(
        {
            "name": "mermaid",
            "provider": {"module": "provider", "class": "MermaidToolProvider"},
            "mcp_servers": {"s": {"type": "streamable-http", "url": "https://x.example/mcp"}},
        }
    )

    assert spec.provider is not None and spec.provider.class_name == "MermaidToolProvider"
    assert spec.mcp_servers["s"].transport == "streamable_http"
    assert spec.public is False  # code never runs unless the caller says the skill is public
