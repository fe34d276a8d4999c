"""Admission control: a user's concurrent turns are capped (429 `too_many_turns`), and a turn
stops counting as soon as its conversation claim is gone, however it ended."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
import socketio
from fastapi import FastAPI

from backend.app import create_asgi_app
from backend.chat.admission import LocalAdmission, RedisAdmission, TooManyTurns
from backend.config import Settings
from tests.support.chat import LOOPBACK_ALLOW, ChatSetup
from tests.support.errors import assert_error
from tests.support.live import live_server
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.wait import eventually


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        egress_allow=LOOPBACK_ALLOW,
        max_concurrent_turns_per_user=1,
    )


async def test_local_admission_counts_only_conversations_whose_claim_is_held() -> None:
    running: set[str] = set()
    admission = LocalAdmission(2, 3, running.__contains__)
    for cid in ("a", "b"):
        running.add(cid)
        await admission.admit(7, cid)
    running.add("c")
    with pytest.raises(TooManyTurns) as refused:
        await admission.admit(7, "c")
    assert refused.value.details == {"limit": 2, "retry_after": 3}
    await admission.admit(8, "c")  # another user has slots of their own
    await admission.admit(7, "a")  # a conversation never counts against itself
    running.discard("b")  # b's turn ended (answer, error, cancel or deadline)
    await admission.admit(7, "c")


async def test_redis_admission_frees_a_slot_when_the_claim_is_released_or_expires(
    redis_url: str,
) -> None:
    redis = aioredis.Redis.from_url(redis_url)
    prefix = "test-admission-claim:"
    admission = RedisAdmission(redis, 2, 2, claim_prefix=prefix)
    user = 424242
    try:
        await redis.set(f"{prefix}a", "1")
        await redis.set(f"{prefix}b", "1", px=300)  # its worker died: the claim expires
        await admission.admit(user, "a")
        await admission.admit(user, "b")
        await redis.set(f"{prefix}c", "1")
        with pytest.raises(TooManyTurns):
            await admission.admit(user, "c")
        await admission.admit(user, "a")  # a conversation never counts against itself

        async def expired() -> bool:
            return not await redis.exists(f"{prefix}b")

        await eventually(expired)
        await admission.admit(user, "c")
        await redis.delete(f"{prefix}a")  # a's turn ended
        await redis.set(f"{prefix}d", "1")
        await admission.admit(user, "d")
    finally:
        await redis.delete(*(f"{prefix}{c}" for c in "abcd"), f"skillhive:admission:{user}")
        await redis.aclose()


async def messages(client: httpx.AsyncClient, chat: ChatSetup, cid: str) -> list[Any]:
    url = f"/api/v1/conversations/{cid}/messages"
    response = await client.get(url, headers=chat.account.headers)
    items: list[Any] = response.json()["items"]
    return items


async def test_one_turn_too_many_is_a_429_that_stores_nothing_and_a_slot_frees_at_the_end(
    app: FastAPI, client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    first, second = await chat.conversation(client), await chat.conversation(client)
    untouched = await client.get(f"/api/v1/conversations/{second}", headers=chat.account.headers)
    gate = threading.Event()
    openai_server.script(Reply(text="slow", gate=gate), Reply(text="next"))
    h = chat.account.headers
    running = asyncio.create_task(
        client.post(f"/api/v1/conversations/{first}/messages", json={"content": "1"}, headers=h)
    )
    try:

        async def started() -> bool:
            return len(openai_server.requests) == 1

        await eventually(started)
        refused = await client.post(
            f"/api/v1/conversations/{second}/messages", json={"content": "2"}, headers=h
        )
        assert_error(refused, 429, "too_many_turns")
        assert refused.headers["retry-after"] == "2"
        assert refused.json()["error"]["details"]["limit"] == 1
        assert await messages(client, chat, second) == []  # nothing written
        # nor is the conversation touched (title, updated_at)
        after = await client.get(f"/api/v1/conversations/{second}", headers=chat.account.headers)
        assert after.json() == untouched.json()
    finally:
        gate.set()
    assert (await running).status_code == 200
    answered = await client.post(
        f"/api/v1/conversations/{second}/messages", json={"content": "2"}, headers=h
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["content"] == "next"


async def test_a_cancelled_turn_frees_its_slot(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    first, second = await chat.conversation(client), await chat.conversation(client)
    gate = threading.Event()
    openai_server.script(Reply(text="never", gate=gate), Reply(text="after the cancel"))
    h = chat.account.headers
    running = asyncio.create_task(
        client.post(f"/api/v1/conversations/{first}/messages", json={"content": "1"}, headers=h)
    )
    try:

        async def started() -> bool:
            return len(openai_server.requests) == 1

        await eventually(started)
        cancel = await client.post(f"/api/v1/conversations/{first}/cancel", headers=h)
        assert cancel.json() == {"cancelled": True}
        answered = await client.post(
            f"/api/v1/conversations/{second}/messages", json={"content": "2"}, headers=h
        )
        assert answered.status_code == 200, answered.text
    finally:
        gate.set()
    assert (await running).json()["status"] == "cancelled"


@pytest.fixture
def server_url(settings: Settings) -> Iterator[str]:
    with live_server(create_asgi_app(settings)) as url:
        yield url


async def test_socketio_send_over_the_limit_acks_too_many_turns(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer, server_url: str
) -> None:
    first, second = await chat.conversation(client), await chat.conversation(client)
    gate = threading.Event()
    openai_server.script(Reply(text="slow", gate=gate))
    sock = socketio.AsyncClient(reconnection=False)
    await sock.connect(
        server_url, namespaces=["/chat"], auth={"token": chat.account.token}, wait_timeout=10
    )
    try:
        send = {"conversation_id": first, "content": "1"}
        assert (await sock.call("chat:send", send, namespace="/chat", timeout=20))["ok"]
        again = {"conversation_id": second, "content": "2"}
        ack = await sock.call("chat:send", again, namespace="/chat", timeout=20)
        assert ack["ok"] is False and ack["error"]["code"] == "too_many_turns"
        assert ack["error"]["details"]["retry_after"] == 2
    finally:
        gate.set()
        await sock.disconnect()
