"""Authorization stays live on open sockets: a revoked or expired token or a deactivated user
ends the sockets relying on it, and their events are refused with the code REST answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio
from fastapi import FastAPI
from sqlalchemy import update

from backend.auth import service as auth_service
from backend.config import Settings
from backend.db.models import ApiToken, User
from backend.db.types import utcnow
from backend.ws.live_auth import LiveAuth
from tests.support.accounts import Account
from tests.support.chat import ChatSetup
from tests.support.redis_server import RedisServer
from tests.support.sockets import Socket


async def rest_code(url: str, token: str) -> str:
    async with httpx.AsyncClient(base_url=url) as rest:
        response = await rest.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401, response.text
    return str(response.json()["error"]["code"])


async def new_token(url: str, account: Account) -> tuple[int, str]:
    async with httpx.AsyncClient(base_url=url, headers=account.headers) as rest:
        created = await rest.post("/api/v1/tokens", json={"name": "tab"})
    assert created.status_code == 201, created.text
    return int(created.json()["id"]), str(created.json()["token"])


async def joins(sock: Socket, conversation_id: str) -> Any:
    return await sock.call("conversation:join", {"conversation_id": conversation_id})


def ended_with(sock: Socket) -> str:
    """The code of the `auth:error` a socket received before the server disconnected it."""
    assert sock.disconnects, "the socket is still connected"
    (notice,) = sock.seen.events["auth:error"]
    return str(notice["error"]["code"])


async def test_revoking_a_token_disconnects_its_sockets_only(
    client: httpx.AsyncClient, chat: ChatSetup, serve: Any, connect: Any
) -> None:
    url = serve()
    cid = await chat.conversation(client)
    token_id, secret = await new_token(url, chat.account)
    doomed = await connect(url, secret)
    other = await connect(url, chat.account.token)  # same user, another token
    assert await joins(doomed, cid) == {"ok": True}

    async with httpx.AsyncClient(base_url=url, headers=chat.account.headers) as rest:
        assert (await rest.delete(f"/api/v1/tokens/{token_id}")).status_code == 204
    await doomed.disconnected()
    assert ended_with(doomed) == "token_revoked" == await rest_code(url, secret)
    assert await joins(other, cid) == {"ok": True}
    assert not other.disconnects


async def test_deactivating_a_user_disconnects_all_their_sockets(
    client: httpx.AsyncClient,
    chat: ChatSetup,
    admin: Account,
    bob: Account,
    serve: Any,
    connect: Any,
) -> None:
    url = serve()
    _, second = await new_token(url, chat.account)
    sockets = [await connect(url, chat.account.token), await connect(url, second)]
    bystander = await connect(url, bob.token)

    async with httpx.AsyncClient(base_url=url, headers=admin.headers) as rest:
        patched = await rest.patch(f"/api/v1/users/{chat.account.id}", json={"is_active": False})
    assert patched.status_code == 200, patched.text
    for sock in sockets:
        await sock.disconnected()
        assert ended_with(sock) == "user_inactive"
    assert await rest_code(url, second) == "user_inactive"
    assert await bystander.call("conversation:leave", {"conversation_id": "x"}) == {"ok": True}
    assert not bystander.disconnects


async def test_a_socket_is_disconnected_when_its_token_expires(
    app: FastAPI, client: httpx.AsyncClient, chat: ChatSetup, serve: Any, connect: Any
) -> None:
    url = serve()
    cid = await chat.conversation(client)
    async with app.state.sessionmaker() as session:
        user = await auth_service.get_user(session, chat.account.id)
        issued = await auth_service.issue_token(
            session, user, "short", expires_at=utcnow() + timedelta(seconds=2)
        )
        await session.commit()
    sock = await connect(url, issued.secret)
    assert await joins(sock, cid) == {"ok": True}  # valid until it expires

    await sock.disconnected(after_s=2)
    assert ended_with(sock) == "token_expired" == await rest_code(url, issued.secret)


async def test_events_are_refused_with_the_rest_code_before_the_socket_is_ended(
    app: FastAPI, client: httpx.AsyncClient, chat: ChatSetup, serve: Any, connect: Any
) -> None:
    """A revocation no gateway was told about (written straight to the database) is still
    seen by the next event, which is refused with REST's code; then the socket is ended."""
    url = serve(socket_auth_recheck_seconds=0)
    cid = await chat.conversation(client)
    token_id, secret = await new_token(url, chat.account)
    sock = await connect(url, secret)
    async with app.state.sessionmaker() as session:
        await session.execute(
            update(ApiToken).where(ApiToken.id == token_id).values(revoked_at=utcnow())
        )
        await session.commit()

    refused = await sock.call("chat:send", {"conversation_id": cid, "content": "hi"})
    assert refused["ok"] is False
    assert refused["error"]["code"] == "token_revoked" == await rest_code(url, secret)
    await sock.disconnected()
    assert ended_with(sock) == "token_revoked"


async def test_a_deactivated_users_socket_cannot_send(
    app: FastAPI, client: httpx.AsyncClient, chat: ChatSetup, serve: Any, connect: Any
) -> None:
    url = serve(socket_auth_recheck_seconds=0)
    cid = await chat.conversation(client)
    sock = await connect(url, chat.account.token)
    async with app.state.sessionmaker() as session:
        await session.execute(
            update(User).where(User.id == chat.account.id).values(is_active=False)
        )
        await session.commit()

    refused = await sock.call("conversation:join", {"conversation_id": cid})
    assert refused["error"]["code"] == "user_inactive"
    await sock.disconnected()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


async def test_a_gateway_cut_off_from_redis_checks_its_sockets_when_it_is_back(
    app: FastAPI, alice: Account, redis_server: RedisServer, serve: Any, connect: Any
) -> None:
    """A revocation while the notice channel is down is never announced: the gateway checks
    every socket when it subscribes again."""
    url = serve(redis_url=redis_server.url)
    token_id, secret = await new_token(url, alice)
    sock = await connect(url, secret)
    redis_server.stop()
    async with app.state.sessionmaker() as session:
        await auth_service.revoke_token(session, alice.id, token_id)  # no notice reaches anyone
        await session.commit()
    redis_server.start()

    notice = await sock.seen.wait("auth:error", deadline_s=30)  # redis-py reconnects, backs off
    assert notice["error"]["code"] == "token_revoked"
    await sock.disconnected()


class _SwallowingPubSub:
    """A Redis subscription whose wait for the next notice loses the cancellation that lands
    in it once, as redis-py can on Python 3.11 (docs/architecture.md)."""

    def __init__(self) -> None:
        self.waiting = asyncio.Event()
        self.swallowed = False

    async def subscribe(self, *channels: str) -> None:
        return None

    async def listen(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "subscribe", "data": 1}
        self.waiting.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.swallowed = True
        yield {"type": "subscribe", "data": 1}
        await asyncio.Event().wait()  # no more notices

    async def aclose(self) -> None:
        return None


async def test_the_notice_listener_ends_after_a_cancel_lost_in_redis() -> None:
    pubsub = _SwallowingPubSub()

    class _Redis:
        def pubsub(self) -> _SwallowingPubSub:
            return pubsub

    live = LiveAuth(socketio.AsyncServer(async_mode="asgi"), Settings())
    live.start(sessionmaker=None, redis=_Redis())  # type: ignore[arg-type]
    await asyncio.wait_for(pubsub.waiting.wait(), 10)
    await asyncio.wait_for(live.aclose(), 10)  # it went on listening before
    assert pubsub.swallowed
