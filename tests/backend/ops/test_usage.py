"""Usage accounting: one record per model call, summed exactly by `GET /api/v1/usage`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from langchain_core.messages import AIMessage, BaseMessage
from sqlalchemy import select

from backend.app import create_app
from backend.config import Settings
from backend.db.models import UsageRecord
from chat_shell.offline import ScriptedChatModel
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, ChatSetup, make_setup
from tests.support.errors import assert_error
from tests.support.ghosts import ghost
from tests.support.lifespan import running
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall

USAGE = "/api/v1/usage"


async def send(client: httpx.AsyncClient, account: Account, cid: str, text: str) -> Any:
    response = await client.post(
        f"/api/v1/conversations/{cid}/messages", json={"content": text}, headers=account.headers
    )
    assert response.status_code == 200, response.text
    return response.json()


async def stored_usage(client: httpx.AsyncClient, account: Account, cid: str) -> tuple[int, int]:
    listed = await client.get(f"/api/v1/conversations/{cid}/messages", headers=account.headers)
    items = listed.json()["items"]
    prompt = sum(m["usage"].get("prompt_tokens", 0) for m in items)
    completion = sum(m["usage"].get("completion_tokens", 0) for m in items)
    return prompt, completion


async def _two_turns(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> str:
    cid = await chat.conversation(client)
    load = Reply(
        tool_calls=[ToolCall("load_skill", {"skill_name": "pdf-tools"})],
        prompt_tokens=120,
        completion_tokens=9,
    )
    openai_server.script(load, Reply(text="Loaded.", prompt_tokens=300, completion_tokens=21))
    await send(client, chat.account, cid, "fill the pdf")
    openai_server.script(Reply(text="Again.", prompt_tokens=50, completion_tokens=5))
    await send(client, chat.account, cid, "and again")
    return cid


async def test_usage_totals_are_exact_against_the_stored_messages_by_day_ghost_and_model(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await _two_turns(client, chat, openai_server)
    prompt, completion = await stored_usage(client, chat.account, cid)
    assert (prompt, completion) == (470, 35)
    h = chat.account.headers
    report = (await client.get(USAGE, headers=h)).json()
    assert report["user"] == chat.account.name
    assert report["totals"] == {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "calls": 3,
        "estimated_calls": 0,
    }
    by_model = (await client.get(USAGE, params={"group_by": "model"}, headers=h)).json()
    assert [(g["key"], g["total_tokens"]) for g in by_model["groups"]] == [("scripted", 505)]
    by_ghost = (await client.get(USAGE, params={"group_by": "ghost"}, headers=h)).json()
    assert [(g["key"], g["calls"]) for g in by_ghost["groups"]] == [("dev/helper", 3)]
    by_day = (await client.get(USAGE, params={"group_by": "day"}, headers=h)).json()
    today = datetime.now(UTC).date().isoformat()
    assert [(g["key"], g["prompt_tokens"]) for g in by_day["groups"]] == [(today, 470)]
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    empty = await client.get(USAGE, params={"from": later}, headers=h)
    assert empty.status_code == 422  # `from` after the default `to` (now)
    window = {"from": later, "to": (datetime.now(UTC) + timedelta(days=1)).isoformat()}
    assert (await client.get(USAGE, params=window, headers=h)).json()["totals"]["calls"] == 0


async def test_conversations_show_their_running_totals(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await _two_turns(client, chat, openai_server)
    h = chat.account.headers
    one = (await client.get(f"/api/v1/conversations/{cid}", headers=h)).json()
    assert one["usage"] == {"prompt_tokens": 470, "completion_tokens": 35, "total_tokens": 505}
    fresh = await chat.conversation(client)
    listed = (await client.get("/api/v1/conversations", headers=h)).json()["items"]
    usage = {c["id"]: c["usage"]["total_tokens"] for c in listed}
    assert usage == {cid: 505, fresh: 0}


async def test_only_admins_see_other_users_and_everyone_grouped_by_user(
    client: httpx.AsyncClient,
    chat: ChatSetup,
    openai_server: FakeOpenAIServer,
    bob: Account,
    admin: Account,
) -> None:
    await _two_turns(client, chat, openai_server)
    alice = chat.account
    assert_error(
        await client.get(USAGE, params={"user": alice.name}, headers=bob.headers),
        403,
        "admin_required",
    )
    assert_error(
        await client.get(USAGE, params={"group_by": "user"}, headers=bob.headers),
        403,
        "admin_required",
    )
    mine = (await client.get(USAGE, headers=bob.headers)).json()
    assert mine["totals"]["calls"] == 0  # bob spent nothing; alice's usage is not his
    theirs = (await client.get(USAGE, params={"user": alice.name}, headers=admin.headers)).json()
    assert theirs["user"] == alice.name and theirs["totals"]["total_tokens"] == 505
    everyone = await client.get(USAGE, params={"group_by": "user"}, headers=admin.headers)
    assert everyone.json()["user"] is None
    assert [(g["key"], g["total_tokens"]) for g in everyone.json()["groups"]] == [(alice.name, 505)]
    missing = await client.get(USAGE, params={"user": "nobody"}, headers=admin.headers)
    assert_error(missing, 404, "user_not_found")


class SilentModel(ScriptedChatModel):
    """A model whose provider reports no usage at all."""

    def _answer(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> Any:
        reply, _ = super()._answer(messages, kwargs)
        return reply, None


@pytest.fixture
async def silent_app(settings: Settings) -> AsyncIterator[FastAPI]:
    model = SilentModel(script=[AIMessage("No usage from me.")], cycle=True)
    application = create_app(settings, chat_model=model)
    async with running(application):
        yield application


async def test_a_call_without_reported_usage_is_recorded_with_the_estimate_marked(
    silent_app: FastAPI, make_account: Any
) -> None:
    from backend.auth import service as auth_service

    async with silent_app.state.sessionmaker() as session:
        user = await auth_service.create_user(session, "quiet")
        issued = await auth_service.issue_token(session, user, "t")
        await session.commit()
    account = Account(id=user.id, name="quiet", token=issued.secret)
    transport = httpx.ASGITransport(app=silent_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        body = ghost("plain")
        h = account.headers
        assert (
            await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=h)
        ).status_code == 201
        created = await client.post("/api/v1/conversations", json={"ghost": "dev/plain"}, headers=h)
        cid = created.json()["id"]
        answer = await send(client, account, cid, "hello there")
        assert answer["usage"]["prompt_tokens"] > 0 and answer["usage"]["completion_tokens"] > 0
        report = (await client.get(USAGE, headers=h)).json()["totals"]
    assert report["estimated_calls"] == report["calls"] == 1
    assert report["prompt_tokens"] == answer["usage"]["prompt_tokens"]
    async with silent_app.state.sessionmaker() as session:
        rows = (await session.scalars(select(UsageRecord))).all()
    assert [(r.estimated, r.conversation_id, r.ghost) for r in rows] == [(True, cid, "dev/plain")]


@pytest.fixture
async def chat(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> ChatSetup:
    return await make_setup(client, alice, openai_server)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The scripted model server is on loopback: reached through an explicit egress allow."""
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW})


@pytest.mark.parametrize(
    "params",
    [{"to": "0001-01-01T00:00:00"}, {"from": "2026-02-01", "to": "2026-01-01"}],
    ids=["30 days before year 1 (an OverflowError, once a 500)", "from after to"],
)
async def test_a_range_that_is_no_range_is_refused(
    client: httpx.AsyncClient, bob: Account, params: dict[str, str]
) -> None:
    assert_error(await client.get(USAGE, params=params, headers=bob.headers), 422, "invalid_range")
