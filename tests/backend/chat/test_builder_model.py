"""The turn builder's model settings: trust of the endpoint, the operator's bounds on its key."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from backend.chat.builder import TurnInputs, build_turn_request, model_settings, skill_spec
from backend.config import Settings
from backend.crd.ghost import Ghost, GhostModel
from backend.crd.skill import Skill
from backend.errors import InvalidRequest
from backend.ghosts.resolve import ResolvedGhost
from backend.kinds.store import Scope

SERVER = Settings(
    model="gpt-small",
    openai_base_url="https://models.example.com/v1",
    openai_api_key=SecretStr("sk-operator"),
    model_max_tokens=1000,
)


def ghost_model(raw: dict[str, Any]) -> GhostModel:
    return GhostModel.model_validate(raw)


def resolved(spec: dict[str, Any]) -> ResolvedGhost:
    crd = Ghost.model_validate({"metadata": {"name": "g"}, "spec": spec})
    return ResolvedGhost.of(crd, Scope(1, "dev"))


def test_the_servers_endpoint_is_trusted_and_a_tenants_is_not() -> None:
    assert model_settings(ghost_model({}), SERVER, {}).trusted
    own = {"baseUrl": "https://mine.example.com/v1", "apiKeySecret": "K"}
    assert not model_settings(ghost_model(own), SERVER, {"K": "sk-mine"}).trusted
    assert model_settings(ghost_model(own), SERVER, {"K": "sk-mine"}, ghost_is_public=True).trusted


def test_on_the_servers_key_only_the_operators_models_are_allowed() -> None:
    assert model_settings(ghost_model({}), SERVER, {}).name == "gpt-small"
    assert model_settings(ghost_model({"name": "offline"}), SERVER, {}).name == "offline"
    with pytest.raises(InvalidRequest) as info:
        model_settings(ghost_model({"name": "gpt-huge"}), SERVER, {})
    assert info.value.code == "model_not_allowed"
    assert info.value.details == {"model": "gpt-huge", "allowed": ["gpt-small"]}
    listed = SERVER.model_copy(update={"allowed_models": ["gpt-small", "gpt-huge"]})
    assert model_settings(ghost_model({"name": "gpt-huge"}), listed, {}).name == "gpt-huge"


@pytest.mark.parametrize(("asked", "sent"), [(None, 1000), (200, 200), (50_000, 1000)])
def test_max_tokens_on_the_servers_key_are_capped(asked: int | None, sent: int) -> None:
    asked_for: dict[str, Any] = {} if asked is None else {"maxTokens": asked}
    assert model_settings(ghost_model(asked_for), SERVER, {}).max_tokens == sent


def test_a_ghost_with_its_own_key_or_endpoint_is_not_bounded() -> None:
    own_key = {"name": "gpt-huge", "maxTokens": 50_000, "apiKeySecret": "K"}
    settings = model_settings(ghost_model(own_key), SERVER, {"K": "sk-mine"})
    assert (settings.name, settings.max_tokens) == ("gpt-huge", 50_000)
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "sk-mine"
    own_endpoint = {"name": "llama", "baseUrl": "https://mine.example.com/v1"}
    settings = model_settings(ghost_model(own_endpoint), SERVER, {})
    assert (settings.name, settings.max_tokens, settings.api_key) == ("llama", None, None)


def test_the_turn_request_carries_the_operators_egress_policy() -> None:
    configured = SERVER.model_copy(update={"egress_allow": ["10.0.0.0/8"]})
    inputs = TurnInputs(
        conversation_id="c",
        user_id=1,
        user_name="ann",
        ghost=resolved({"model": {"name": "offline"}}),
        catalog=[],
        skills=[],
        skill_search=False,
        history=[],
        user_turns_before=0,
        user_message="hi",
        secrets={},
    )
    request = build_turn_request(inputs, configured)
    assert request.egress.allow == ("10.0.0.0/8",)


@pytest.mark.parametrize(
    ("mode", "sent"), [(None, "direct"), ("direct", "direct"), ("code", "code")]
)
def test_the_ghosts_mcp_tool_mode_reaches_the_turn_request(mode: str | None, sent: str) -> None:
    spec: dict[str, Any] = {"model": {"name": "offline"}}
    if mode is not None:
        spec["mcpToolMode"] = mode
    inputs = TurnInputs(
        conversation_id="c",
        user_id=1,
        user_name="ann",
        ghost=resolved(spec),
        catalog=[],
        skills=[],
        skill_search=False,
        history=[],
        user_turns_before=0,
        user_message="hi",
        secrets={},
    )
    assert build_turn_request(inputs, SERVER).mcp_tool_mode == sent


@pytest.mark.parametrize(("stored", "sent"), [([], None), (["echo", "fx/*"], ["echo", "fx/*"])])
def test_a_skills_allowed_tools_reach_the_engine_unset_when_empty(
    stored: list[str], sent: list[str] | None
) -> None:
    crd = {
        "metadata": {"name": "fx"},
        "spec": {"description": "d", "allowedTools": stored},
        "status": {"public": True, "sha256": "0" * 64, "size": 1, "codeAllowed": False},
    }
    assert skill_spec(Skill.model_validate(crd)).allowed_tools == sent
