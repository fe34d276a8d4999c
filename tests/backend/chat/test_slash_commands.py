"""`/command` and `/skill` through REST chat with the offline model, on both databases."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.accounts import Account
from tests.support.marketplace import import_market, make_ghost


async def conversation(client: httpx.AsyncClient, account: Account, ghost: str) -> str:
    created = await client.post(
        "/api/v1/conversations", json={"ghost": ghost}, headers=account.headers
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def say(client: httpx.AsyncClient, account: Account, cid: str, text: str) -> dict[str, Any]:
    reply = await client.post(
        f"/api/v1/conversations/{cid}/messages", json={"content": text}, headers=account.headers
    )
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


async def seller(client: httpx.AsyncClient, account: Account) -> str:
    await import_market(client, account)
    made = await make_ghost(client, account, "seller", plugins=["sales", "ui-toolkit"])
    assert made.status_code == 201, made.text
    return await conversation(client, account, "dev/seller")


async def test_a_plugin_command_becomes_the_request_and_loads_its_skills(
    client: httpx.AsyncClient, alice: Account
) -> None:
    cid = await seller(client, alice)
    answer = await say(client, alice, cid, "/forecast Q3 EMEA")
    assert answer["status"] == "ok", answer
    assert 'You said: "Forecast quarter Q3 for region EMEA."' in answer["content"]
    assert answer["loaded_skills"] == []  # forecast names no skill

    answer = await say(client, alice, cid, "/call-summary met ACME today")
    assert answer["status"] == "ok", answer
    assert "Active skills: sales/call-prep" in answer["content"]
    assert "met ACME today" in answer["content"]
    assert "sales/call-prep" in [s["name"] for s in answer["loaded_skills"]]
    # preloaded by the command, not loaded by the model
    loaded_by_model = [c["args"].get("skill_name") for c in answer["tool_calls"]]
    assert "sales/call-prep" not in loaded_by_model


async def test_a_skill_command_loads_the_skill_directly(
    client: httpx.AsyncClient, alice: Account
) -> None:
    cid = await seller(client, alice)
    answer = await say(client, alice, cid, "/ui-toolkit/web a landing page")
    assert answer["status"] == "ok", answer
    assert "Active skills: ui-toolkit/web" in answer["content"]
    assert 'You said: "a landing page"' in answer["content"]
    assert [s["name"] for s in answer["loaded_skills"]] == ["ui-toolkit/web"]
    assert answer["tool_calls"] == []  # preloaded, not loaded by the model


async def test_an_unknown_command_is_an_error_not_a_model_call(
    client: httpx.AsyncClient, alice: Account
) -> None:
    cid = await seller(client, alice)
    answer = await say(client, alice, cid, "/nope now")
    assert answer["status"] == "error"
    assert answer["error"]["code"] == "unknown_command"
    assert "/forecast" in answer["error"]["message"]
    assert answer["content"] == "" and answer["usage"]["prompt_tokens"] == 0


async def test_a_doubled_slash_sends_an_ordinary_message(
    client: httpx.AsyncClient, alice: Account
) -> None:
    cid = await seller(client, alice)
    answer = await say(client, alice, cid, "//nope is a path")
    assert answer["status"] == "ok"
    assert 'You said: "/nope is a path"' in answer["content"]


async def test_another_users_ghost_without_the_plugin_offers_no_command(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    await import_market(client, alice)
    assert (await make_ghost(client, bob, "plain")).status_code == 201
    cid = await conversation(client, bob, "dev/plain")
    answer = await say(client, bob, cid, "/forecast Q3 EMEA")
    assert answer["status"] == "error" and answer["error"]["code"] == "unknown_command"
