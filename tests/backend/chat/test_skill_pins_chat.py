"""Turns of a Ghost pinning a skill version, and `skill_changed` when a loaded skill changes.

The scripted model server records what the model is sent, so a test reads which version's
instructions reached it through `load_skill` (and the loaded skill's block on later turns).
"""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select

from backend.chat.skill_versions import SkillChangedEvent
from backend.chat.transport.envelope import TurnEvent, dumps, loads
from backend.db.models import ConversationSkill
from backend.ws.rooms import socketio_event
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import ghost_crd, load, parse_sse, scripted_conversation, system_prompt
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.skills import upload

SKILLS = "/api/v1/namespaces/dev/skills"


def instructions(n: int) -> str:
    return f"FORM-RULES-V{n}: check page {n} first."


def description(n: int) -> str:
    return f"Fill PDF forms, edition {n}."


def package(n: int) -> bytes:

    md = f"---\nname: forms\ndescription: {description(n)}\n---\n{instructions(n)}\n"
    return zips.build({"SKILL.md": md}, folder="forms")


async def release(client: httpx.AsyncClient, account: Account, n: int) -> None:
    if n == 1:
        assert (await upload(client, account.headers, package(1))).status_code == 201
        return
    response = await client.put(
        f"{SKILLS}/forms", files={"file": ("s.zip", package(n))}, headers=account.headers
    )
    assert response.status_code == 200, response.text


async def turn(
    client: httpx.AsyncClient, account: Account, cid: str, text: str
) -> list[tuple[str, dict[str, Any]]]:
    async with client.stream(
        "POST",
        f"/api/v1/conversations/{cid}/messages",
        json={"content": text},
        headers={**account.headers, "Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200
        body = (await response.aread()).decode()
    events = parse_sse(body)
    assert events[-1][0] == "done", events[-1]
    return events


def changed(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [data for kind, data in events if kind == "skill_changed"]


async def test_a_pinned_skill_loads_the_pinned_instructions(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    await release(client, alice, 1)
    await release(client, alice, 2)
    cid = await scripted_conversation(client, alice, openai_server, "forms@1", ghost="former")
    openai_server.script(load("forms"), Reply(text="ok"))
    events = await turn(client, alice, cid, "fill the form")
    loaded = openai_server.requests[1]
    assert instructions(1) in system_prompt(loaded)
    assert instructions(2) not in system_prompt(loaded)
    assert changed(events) == []

    # The skill moves on; the pin holds: no change, the same instructions, still retained.
    await release(client, alice, 3)
    openai_server.script(Reply(text="still ok"))
    events = await turn(client, alice, cid, "and the next page")
    assert changed(events) == []
    assert instructions(1) in system_prompt(openai_server.requests[0])


async def test_the_catalog_describes_the_pinned_version(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    await release(client, alice, 1)
    await release(client, alice, 2)
    cid = await scripted_conversation(client, alice, openai_server, "forms@1", ghost="former")
    openai_server.script(Reply(text="ok"))
    await turn(client, alice, cid, "hello")
    prompt = system_prompt(openai_server.requests[0])
    assert "<name>forms</name>" in prompt
    assert description(1) in prompt and description(2) not in prompt


async def test_search_describes_the_pinned_version(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    await release(client, alice, 1)
    await release(client, alice, 2)
    cid = await scripted_conversation(
        client, alice, openai_server, "forms@1", ghost="former", catalogBudgetTokens=10
    )
    openai_server.script(
        Reply(tool_calls=[ToolCall("search_skills", {"query": "fill pdf forms"})]),
        Reply(text="found it"),
    )
    answer = await client.post(
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "how are you?"},
        headers=alice.headers,
    )
    assert answer.status_code == 200, answer.text
    (call,) = answer.json()["tool_calls"]
    assert call["name"] == "search_skills" and "forms" in call["result"]
    assert description(1) in call["result"] and description(2) not in call["result"]


async def test_an_unpinned_skill_uses_the_current_version(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    await release(client, alice, 1)
    await release(client, alice, 2)
    cid = await scripted_conversation(client, alice, openai_server, "forms", ghost="former")
    openai_server.script(load("forms"), Reply(text="ok"))
    await turn(client, alice, cid, "fill the form")
    assert instructions(2) in system_prompt(openai_server.requests[1])
    assert instructions(1) not in system_prompt(openai_server.requests[1])


async def test_a_retained_skill_updated_between_turns_is_announced_once(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer, app: Any
) -> None:
    await release(client, alice, 1)
    cid = await scripted_conversation(client, alice, openai_server, "forms", ghost="former")
    openai_server.script(load("forms"), Reply(text="ok"))
    await turn(client, alice, cid, "fill the form")

    await release(client, alice, 2)
    openai_server.script(Reply(text="next"))
    events = await turn(client, alice, cid, "and the next page")
    assert changed(events) == [
        {
            "type": "skill_changed",
            "skill": "forms",
            "from_version": 1,
            "to_version": 2,
            "pinned": False,
            "conversation_id": cid,
            "message_id": events[0][1]["message_id"],
        }
    ]
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "start" and kinds.index("skill_changed") < kinds.index("token")
    assert instructions(2) in system_prompt(openai_server.requests[0])  # the new version
    assert instructions(1) not in system_prompt(openai_server.requests[0])

    openai_server.script(Reply(text="again"))
    assert changed(await turn(client, alice, cid, "one more")) == []  # once

    async with app.state.sessionmaker() as session:
        rows = (await session.execute(select(ConversationSkill))).scalars().all()
    assert [(r.conversation_id, r.skill, r.version, r.pinned) for r in rows] == [
        (cid, "forms", 2, False)
    ]


async def test_moving_the_pin_is_a_change_marked_pinned(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    await release(client, alice, 1)
    await release(client, alice, 2)
    cid = await scripted_conversation(client, alice, openai_server, "forms@1", ghost="former")
    openai_server.script(load("forms"), Reply(text="ok"))
    await turn(client, alice, cid, "fill the form")
    model = {"name": "scripted", "baseUrl": openai_server.base_url, "apiKeySecret": "MODEL_KEY"}
    moved = await client.put(
        "/api/v1/namespaces/dev/ghosts/former",
        json=ghost_crd("former", model=model, skills=["forms@2"]),
        headers=alice.headers,
    )
    assert moved.status_code == 200, moved.text
    openai_server.script(Reply(text="next"))
    events = await turn(client, alice, cid, "and the next page")
    assert [(c["from_version"], c["to_version"], c["pinned"]) for c in changed(events)] == [
        (1, 2, True)
    ]
    assert instructions(2) in system_prompt(openai_server.requests[0])


def test_the_event_travels_as_an_envelope_and_as_socketio_chat_skill_changed() -> None:
    event = SkillChangedEvent(skill="forms", from_version=1, to_version=2, pinned=False)
    envelope = TurnEvent(conversation_id="c", message_id=7, event=event)
    assert loads(dumps(envelope)) == envelope  # the Redis transport's round trip
    assert socketio_event(envelope) == (
        "chat:skill_changed",
        {
            "skill": "forms",
            "from_version": 1,
            "to_version": 2,
            "pinned": False,
            "conversation_id": "c",
            "message_id": 7,
        },
    )
