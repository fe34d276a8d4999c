"""A Ghost's catalog at any size: full while it fits the budget, else compact plus search_skills.

Real turns over REST against the scripted OpenAI-compatible server, which records what the
model was sent: the system prompt and the tool schemas.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import ChatSetup, ghost_crd, load, send, system_prompt
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.skills import upload

SKILLS = {
    "tides": ("Predict the tides of a harbour for sailors.", "TIDES-BODY: read the tide table."),
    "avalanche": ("Rate avalanche danger on a snowy slope.", "AVALANCHE-BODY: check the snow."),
    "charts": ("Draw charts of numbers. Use when asked to plot.", "CHARTS-BODY: pick the axes."),
}


async def setup(
    client: httpx.AsyncClient, alice: Account, server: FakeOpenAIServer, **spec: Any
) -> ChatSetup:
    for name, (description, body) in SKILLS.items():
        md = f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"
        response = await upload(client, alice.headers, zips.build({"SKILL.md": md}, folder=name))
        assert response.status_code == 201, response.text
    model = {"name": "scripted", "baseUrl": server.base_url, "apiKeySecret": "KEY"}
    put = await client.put("/api/v1/secrets/KEY", json={"value": "sk"}, headers=alice.headers)
    assert put.status_code in (201, 204)
    body = ghost_crd("sailor", model=model, skillSelector={}, **spec)
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=alice.headers)
    assert created.status_code == 201, created.text
    return ChatSetup(account=alice, ghost="dev/sailor")


def tool(request: dict[str, Any], name: str) -> dict[str, Any] | None:
    found = [t["function"] for t in request.get("tools", []) if t["function"]["name"] == name]
    return found[0] if found else None


async def test_within_budget_the_catalog_lists_every_skill_and_load_skill_has_an_enum(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    chat = await setup(client, alice, openai_server)
    cid = await chat.conversation(client)
    openai_server.script(load("avalanche"), Reply(text="Rated."))
    answer = await send(client, chat, cid, "is this slope safe to ski?")
    assert answer.status_code == 200, answer.text
    assert [s["name"] for s in answer.json()["loaded_skills"]] == ["avalanche"]
    first, second = openai_server.requests
    prompt = system_prompt(first)
    assert all(f"<name>{n}</name>" in prompt for n in SKILLS)
    assert not any(body in prompt for _, body in SKILLS.values())  # bodies only when loaded
    load_skill = tool(first, "load_skill")
    assert load_skill is not None and tool(first, "search_skills") is None
    assert load_skill["parameters"]["properties"]["skill_name"]["enum"] == sorted(SKILLS)
    assert "AVALANCHE-BODY" in system_prompt(second)


async def test_over_budget_the_catalog_is_compact_and_search_finds_the_rest(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    chat = await setup(client, alice, openai_server, catalogBudgetTokens=10)
    cid = await chat.conversation(client)
    openai_server.script(
        Reply(tool_calls=[ToolCall("search_skills", {"query": "avalanche danger"})]),
        load("avalanche"),
        Reply(text="Rated."),
    )
    answer = await send(client, chat, cid, "when is high tide in the harbour?")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [s["name"] for s in body["loaded_skills"]] == ["avalanche"]
    assert [c["name"] for c in body["tool_calls"]] == ["search_skills", "load_skill"]
    assert "avalanche" in body["tool_calls"][0]["result"]
    first, _, third = openai_server.requests
    prompt = system_prompt(first)
    # The compact catalog: the best match for the message, not every skill.
    assert "<name>tides</name>" in prompt and "<name>avalanche</name>" not in prompt
    assert "search_skills" in prompt
    load_skill = tool(first, "load_skill")
    assert (
        load_skill is not None
        and "enum" not in load_skill["parameters"]["properties"]["skill_name"]
    )
    assert tool(first, "search_skills") is not None
    assert "AVALANCHE-BODY" in system_prompt(third)

    # The next turn starts with the recently used skill, listed and loaded.
    openai_server.script(Reply(text="Still rated."))
    await send(client, chat, cid, "and tomorrow?")
    prompt = system_prompt(openai_server.requests[0])
    assert "<name>avalanche</name>" in prompt and "AVALANCHE-BODY" in prompt


async def test_over_budget_an_unknown_name_is_refused_and_small_talk_lists_no_match(
    client: httpx.AsyncClient, alice: Account, bob: Account, openai_server: FakeOpenAIServer
) -> None:
    other = zips.build(
        {"SKILL.md": "---\nname: secret-plan\ndescription: Bob's own plans.\n---\nBOB-BODY\n"},
        folder="secret-plan",
    )
    assert (await upload(client, bob.headers, other)).status_code == 201
    chat = await setup(client, alice, openai_server, catalogBudgetTokens=10)
    cid = await chat.conversation(client)
    openai_server.script(load("secret-plan"), Reply(text="No such skill."))
    answer = await send(client, chat, cid, "hi, how are you?")
    assert answer.status_code == 200, answer.text
    call = answer.json()["tool_calls"][0]
    assert call["error"] and "Unknown skill 'secret-plan'" in call["result"]
    assert answer.json()["loaded_skills"] == []
    prompt = system_prompt(openai_server.requests[0])
    assert not any(f"<name>{n}</name>" in prompt for n in [*SKILLS, "secret-plan"])
