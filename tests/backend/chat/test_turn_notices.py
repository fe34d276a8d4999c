"""Non-fatal notices of a turn: a preloaded skill that is disabled is reported, not dropped."""

from __future__ import annotations

import httpx

from backend.chat.transport import TurnEvent
from backend.ws.rooms import socketio_event
from chat_shell.contracts import SkillErrorEvent
from tests.support.accounts import Account
from tests.support.chat import PDF_PROMPT, make_setup, parse_sse, system_prompt
from tests.support.openai_server import FakeOpenAIServer, Reply

NOTICE = {
    "type": "skill_error",
    "skill": "pdf-tools",
    "code": "skill_disabled",
    "message": "the preloaded skill 'pdf-tools' is disabled; this turn runs without it",
}


async def test_a_disabled_preloaded_skill_is_reported_in_the_turns_events(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    chat = await make_setup(client, alice, openai_server, preload_skills=["pdf-tools"])
    disabled = await client.patch(
        "/api/v1/namespaces/dev/skills/pdf-tools", json={"enabled": False}, headers=alice.headers
    )
    assert disabled.status_code == 200, disabled.text
    cid = await chat.conversation(client)
    openai_server.script(Reply(text="Answered without the skill."))

    async with client.stream(
        "POST",
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "fill the form"},
        headers={**alice.headers, "Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200
        events = parse_sse((await response.aread()).decode())

    kinds = [kind for kind, _ in events]
    assert kinds[:2] == ["start", "skill_error"] and kinds[-1] == "done"
    notice = events[1][1]
    assert {k: notice[k] for k in NOTICE} == NOTICE
    stored = events[-1][1]["message"]
    assert stored["status"] == "ok" and stored["content"] == "Answered without the skill."
    assert stored["loaded_skills"] == []
    (call,) = openai_server.requests
    assert PDF_PROMPT not in system_prompt(call) and "pdf-tools" not in system_prompt(call)


async def test_an_enabled_preloaded_skill_brings_no_notice(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    chat = await make_setup(client, alice, openai_server, preload_skills=["pdf-tools"])
    cid = await chat.conversation(client)
    openai_server.script(Reply(text="With the skill."))

    async with client.stream(
        "POST",
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "fill the form"},
        headers={**alice.headers, "Accept": "text/event-stream"},
    ) as response:
        events = parse_sse((await response.aread()).decode())

    assert "skill_error" not in [kind for kind, _ in events]
    assert [s["name"] for s in events[-1][1]["message"]["loaded_skills"]] == ["pdf-tools"]


def test_the_notice_reaches_socketio_as_chat_notice() -> None:
    notice = SkillErrorEvent.model_validate(NOTICE)
    name, data = socketio_event(TurnEvent(conversation_id="c", message_id=3, event=notice))

    assert name == "chat:notice"
    assert data == {
        "kind": "skill_error",
        "skill": "pdf-tools",
        "code": "skill_disabled",
        "message": NOTICE["message"],
        "conversation_id": "c",
        "message_id": 3,
    }
