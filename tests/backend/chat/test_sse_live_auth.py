"""Authorization stays live on an open SSE stream, as on a socket (backend/ws/live_auth.py): a
revoked or expired token or a deactivated user ends the stream with one last `error` event of
REST's code, and the turn behind it is cancelled and stored so. Other streams go on. A JSON send
waiting for its answer ends with that code as a 401 the same way. In embedded
mode and in Redis mode (the notice travels through Redis; a worker runs the turn)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from fastapi import FastAPI
from sqlalchemy import select

from backend.auth import service as auth_service
from backend.chat.composition import build_worker
from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.models import Message
from backend.db.types import utcnow
from backend.secrets.cipher import load_cipher
from backend.worker import TurnWorker
from tests.support.accounts import Account
from tests.support.chat import ChatSetup, make_setup, parse_sse
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.wait import eventually

ENDS_WITHIN_S = 10.0  # a stream that outlived its grant this long was not ended


@pytest.fixture(params=["embedded", "redis"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings(settings: Settings, mode: str, request: pytest.FixtureRequest) -> Settings:
    if mode == "embedded":
        return settings
    url = request.getfixturevalue("redis_url")
    prefix = f"sse-auth-{uuid.uuid4().hex[:8]}:"  # this test's own keys on the shared server
    return settings.model_copy(update={"redis_url": url, "redis_prefix": prefix})


@pytest.fixture
async def worker(app: FastAPI, settings: Settings) -> AsyncIterator[None]:
    """In Redis mode, a worker as `skillhive worker` builds it (minus the process) runs turns."""
    if settings.redis_url is None:
        yield
        return
    engine = create_engine(settings.effective_database_url)
    redis = aioredis.Redis.from_url(settings.redis_url)
    transport, runner = build_worker(
        settings, create_sessionmaker(engine), load_cipher(settings), redis
    )
    turn_worker = TurnWorker(redis, runner, concurrency=4, keys=transport.keys)
    running = asyncio.create_task(turn_worker.run())
    try:
        yield
    finally:
        turn_worker.stop()
        await running
        await transport.aclose()
        keys = [key async for key in redis.scan_iter(f"{settings.redis_prefix}*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        await engine.dispose()


@contextmanager
def held_answers(openai_server: FakeOpenAIServer, *answers: str) -> Iterator[None]:
    """The next model calls answer these texts, each held open after its first token until the
    block ends."""
    gate = threading.Event()
    openai_server.script(*(Reply(text=answer, gate=gate) for answer in answers))
    try:
        yield
    finally:
        gate.set()


async def start_stream(
    client: httpx.AsyncClient,
    openai_server: FakeOpenAIServer,
    cid: str,
    secret: str,
    *,
    accept: str = "text/event-stream",
) -> asyncio.Task[httpx.Response]:
    """A send with `secret` (SSE, or JSON with `accept="application/json"`), once its turn is
    calling the model (the task of the send)."""
    calls = len(openai_server.requests)
    streaming = asyncio.create_task(
        client.post(
            f"/api/v1/conversations/{cid}/messages",
            json={"content": "a question"},
            headers={"Authorization": f"Bearer {secret}", "Accept": accept},
        )
    )

    async def calling() -> bool:
        if streaming.done():
            raise AssertionError(f"the send ended early: {streaming.result().text}")
        return len(openai_server.requests) > calls

    await eventually(calling)
    return streaming


async def ended_with(streaming: asyncio.Task[httpx.Response]) -> dict[str, Any]:
    """The last event of a stream that must end without its turn's answer: `error`, once."""
    await asyncio.wait({streaming}, timeout=ENDS_WITHIN_S)
    assert streaming.done(), "the stream goes on though its caller lost access"
    response = streaming.result()
    assert response.status_code == 200, response.text
    events = parse_sse(response.text)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "start" and kinds.count("error") == 1 and kinds[-1] == "error", kinds
    assert "done" not in kinds and "usage" not in kinds
    last = events[-1][1]
    assert last["reply"] is None  # the stored answer is not delivered either
    return last


async def answered(streaming: asyncio.Task[httpx.Response]) -> str:
    events = parse_sse((await streaming).text)
    assert events[-1][0] == "done", events
    return str(events[-1][1]["message"]["content"])


async def stored_answer(app: FastAPI, cid: str) -> str:
    """The status of the conversation's stored answer, once it is stored."""

    async def status() -> str | None:
        async with app.state.sessionmaker() as session:
            found = await session.scalar(
                select(Message.status).where(
                    Message.conversation_id == cid, Message.role == "assistant"
                )
            )
        return str(found) if found is not None else None

    return await eventually(status)


async def new_token(client: httpx.AsyncClient, account: Account) -> tuple[int, str]:
    created = await client.post("/api/v1/tokens", json={"name": "tab"}, headers=account.headers)
    assert created.status_code == 201, created.text
    return int(created.json()["id"]), str(created.json()["token"])


async def test_revoking_a_token_ends_its_stream_and_cancels_the_turn(
    app: FastAPI,
    client: httpx.AsyncClient,
    chat: ChatSetup,
    openai_server: FakeOpenAIServer,
    worker: None,
) -> None:
    token_id, secret = await new_token(client, chat.account)
    doomed_cid, other_cid = await chat.conversation(client), await chat.conversation(client)
    with held_answers(openai_server, "never delivered", "the other token's answer"):
        doomed = await start_stream(client, openai_server, doomed_cid, secret)
        other = await start_stream(client, openai_server, other_cid, chat.account.token)
        revoked = await client.delete(f"/api/v1/tokens/{token_id}", headers=chat.account.headers)
        assert revoked.status_code == 204
        last = await ended_with(doomed)
    assert (last["code"], last["conversation_id"]) == ("token_revoked", doomed_cid)
    assert await stored_answer(app, doomed_cid) == "cancelled"
    # the same user's stream on another token is not affected
    assert await answered(other) == "the other token's answer"
    assert await stored_answer(app, other_cid) == "ok"


async def test_deactivating_a_user_ends_their_stream_and_cancels_the_turn(
    app: FastAPI,
    client: httpx.AsyncClient,
    chat: ChatSetup,
    admin: Account,
    bob: Account,
    openai_server: FakeOpenAIServer,
    worker: None,
) -> None:
    bobs = await make_setup(client, bob, openai_server)
    doomed_cid, other_cid = await chat.conversation(client), await bobs.conversation(client)
    with held_answers(openai_server, "never delivered", "bob's answer"):
        doomed = await start_stream(client, openai_server, doomed_cid, chat.account.token)
        other = await start_stream(client, openai_server, other_cid, bob.token)
        patched = await client.patch(
            f"/api/v1/users/{chat.account.id}", json={"is_active": False}, headers=admin.headers
        )
        assert patched.status_code == 200, patched.text
        last = await ended_with(doomed)
    assert last["code"] == "user_inactive"
    assert await stored_answer(app, doomed_cid) == "cancelled"
    # another user's stream is not affected
    assert await answered(other) == "bob's answer"
    assert await stored_answer(app, other_cid) == "ok"


async def test_a_stream_ends_when_its_token_expires(
    app: FastAPI,
    client: httpx.AsyncClient,
    chat: ChatSetup,
    openai_server: FakeOpenAIServer,
    worker: None,
) -> None:
    async with app.state.sessionmaker() as session:
        user = await auth_service.get_user(session, chat.account.id)
        issued = await auth_service.issue_token(
            session, user, "short", expires_at=utcnow() + timedelta(seconds=3)
        )
        await session.commit()
    cid = await chat.conversation(client)
    with held_answers(openai_server, "never delivered"):
        streaming = await start_stream(client, openai_server, cid, issued.secret)
        last = await ended_with(streaming)  # no notice: the grant's own timer
    assert last["code"] == "token_expired"
    assert await stored_answer(app, cid) == "cancelled"


async def test_revoking_a_token_ends_a_json_wait_with_401_and_cancels_the_turn(
    app: FastAPI,
    client: httpx.AsyncClient,
    chat: ChatSetup,
    openai_server: FakeOpenAIServer,
    worker: None,
) -> None:
    token_id, secret = await new_token(client, chat.account)
    doomed_cid, other_cid = await chat.conversation(client), await chat.conversation(client)
    json_accept = {"accept": "application/json"}
    with held_answers(openai_server, "never delivered", "the other token's answer"):
        doomed = await start_stream(client, openai_server, doomed_cid, secret, **json_accept)
        other = await start_stream(
            client, openai_server, other_cid, chat.account.token, **json_accept
        )
        revoked = await client.delete(f"/api/v1/tokens/{token_id}", headers=chat.account.headers)
        assert revoked.status_code == 204
        await asyncio.wait({doomed}, timeout=ENDS_WITHIN_S)
        assert doomed.done(), "the JSON wait goes on though its caller lost access"
    response = doomed.result()
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "token_revoked"
    assert "never delivered" not in response.text
    assert await stored_answer(app, doomed_cid) == "cancelled"
    answer = await other
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"] == "the other token's answer"
