"""Chat over Socket.IO against a live uvicorn server: Python `socketio.AsyncClient` and Node."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import socketio

from backend.app import create_asgi_app
from backend.config import Settings
from tests.support.accounts import Account
from tests.support.chat import ChatSetup, load
from tests.support.installs import CACHE, npm_install
from tests.support.live import live_server
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.sockets import Recorder

SOCKETIO_CLIENT_PIN = "socket.io-client@4.8.1"
CLIENT_JS = Path(__file__).with_name("js") / "chat_client.cjs"


@pytest.fixture
def server_url(settings: Settings) -> Iterator[str]:
    with live_server(create_asgi_app(settings)) as url:
        yield url


@pytest.fixture
async def connect(server_url: str) -> AsyncIterator[Any]:
    clients: list[socketio.AsyncClient] = []

    async def open_client(account: Account) -> tuple[socketio.AsyncClient, Recorder]:
        client = socketio.AsyncClient(reconnection=False)
        recorder = Recorder(client)
        await client.connect(
            server_url, namespaces=["/chat"], auth={"token": account.token}, wait_timeout=10
        )
        clients.append(client)
        return client, recorder

    yield open_client
    for client in clients:
        await client.disconnect()


async def call(client: socketio.AsyncClient, event: str, data: Any) -> Any:
    return await client.call(event, data, namespace="/chat", timeout=20)


async def test_socketio_chat_streams_to_every_socket_of_the_room(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer, connect: Any
) -> None:
    cid = await chat.conversation(client)
    first, seen_first = await connect(chat.account)
    second, seen_second = await connect(chat.account)  # e.g. another browser tab
    for sock in (first, second):
        assert await call(sock, "conversation:join", {"conversation_id": cid}) == {"ok": True}

    openai_server.script(load("pdf-tools"), Reply(text="Hello over Socket.IO."))
    ack = await call(first, "chat:send", {"conversation_id": cid, "content": "a pdf task"})
    assert ack["ok"] is True and isinstance(ack["message_id"], int)
    for recorder in (seen_first, seen_second):
        done = await recorder.wait("chat:done")
        assert done["message"]["content"] == "Hello over Socket.IO."
        assert "".join(c["delta"] for c in recorder.events["chat:chunk"]) == "Hello over Socket.IO."
        assert recorder.events["chat:skill_loaded"][0]["name"] == "pdf-tools"
        phases = [t["phase"] for t in recorder.events["chat:tool"]]
        assert phases == ["start", "end"]
        assert recorder.order[0] == "chat:start"


async def test_sending_joins_the_senders_socket_to_the_conversation(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer, connect: Any
) -> None:
    cid = await chat.conversation(client)
    sock, seen = await connect(chat.account)  # a naive client: no conversation:join first
    openai_server.script(Reply(text="You get this answer."))
    assert (await call(sock, "chat:send", {"conversation_id": cid, "content": "hi"}))["ok"]
    done = await seen.wait("chat:done")
    assert done["message"]["content"] == "You get this answer."
    assert seen.order[0] == "chat:start"


async def test_bad_tokens_are_refused_with_the_error_shape(server_url: str) -> None:
    for auth, code in (({"token": "shk_nope"}, "invalid_token"), ({}, "missing_token")):
        sock = socketio.AsyncClient(reconnection=False)
        refusals: list[Any] = []
        sock.on("connect_error", refusals.append, namespace="/chat")
        with pytest.raises(socketio.exceptions.ConnectionError):
            await sock.connect(server_url, namespaces=["/chat"], auth=auth, wait_timeout=10)
        assert refusals[0]["data"]["error"]["code"] == code
        await sock.disconnect()


async def test_other_users_cannot_join_send_or_cancel(
    client: httpx.AsyncClient, chat: ChatSetup, bob: Account, connect: Any
) -> None:
    cid = await chat.conversation(client)
    sock, _ = await connect(bob)
    for event, data in [
        ("conversation:join", {"conversation_id": cid}),
        ("chat:send", {"conversation_id": cid, "content": "hi"}),
        ("chat:cancel", {"conversation_id": cid}),
    ]:
        ack = await call(sock, event, data)
        assert ack["ok"] is False and ack["error"]["code"] == "conversation_not_found"
    bad = await call(sock, "chat:send", {"conversation_id": cid})
    assert bad["ok"] is False and bad["error"]["code"] == "invalid_request"
    unknown = await call(sock, "chat:explode", {})
    assert unknown["error"]["code"] == "unknown_event"


async def test_a_nul_in_an_event_is_an_invalid_request(
    client: httpx.AsyncClient, chat: ChatSetup, connect: Any
) -> None:
    # PostgreSQL text holds no NUL: looking up or storing one was a driver error.
    cid = await chat.conversation(client)
    sock, _ = await connect(chat.account)
    for event, data in [
        ("conversation:join", {"conversation_id": "a\x00b"}),
        ("chat:send", {"conversation_id": "a\x00b", "content": "hi"}),
        ("chat:send", {"conversation_id": cid, "content": "hi\x00"}),
        ("chat:cancel", {"conversation_id": "a\x00b"}),
    ]:
        ack = await call(sock, event, data)
        assert ack["ok"] is False and ack["error"]["code"] == "invalid_request", (event, ack)
    messages = await client.get(
        f"/api/v1/conversations/{cid}/messages", headers=chat.account.headers
    )
    assert messages.json()["items"] == []


async def test_chat_cancel_ends_the_turn_with_cancelled(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer, connect: Any
) -> None:
    cid = await chat.conversation(client)
    sock, seen = await connect(chat.account)
    await call(sock, "conversation:join", {"conversation_id": cid})
    gate = threading.Event()
    openai_server.script(Reply(text="this answer never finishes", gate=gate))
    try:
        await call(sock, "chat:send", {"conversation_id": cid, "content": "go"})
        await seen.wait("chat:chunk")  # mid-stream
        busy = await call(sock, "chat:send", {"conversation_id": cid, "content": "again"})
        assert busy["error"]["code"] == "turn_in_progress"
        assert await call(sock, "chat:cancel", {"conversation_id": cid}) == {
            "ok": True,
            "cancelled": True,
        }
        error = await seen.wait("chat:error")
    finally:
        gate.set()
    assert error["code"] == "cancelled"
    assert error["message"] == "the turn was cancelled"  # the error text, as the wire says
    assert error["reply"]["status"] == "cancelled"  # the stored answer
    assert error["reply"]["content"].startswith("this")  # what had streamed is kept


@pytest.fixture(scope="session")
def node_modules() -> Path:
    if shutil.which("node") is None:
        pytest.fail("node is required for the JS client test (the machine has it)")
    return npm_install(CACHE / "npm-socketio", SOCKETIO_CLIENT_PIN)


async def test_a_node_socketio_client_chats(
    client: httpx.AsyncClient,
    chat: ChatSetup,
    openai_server: FakeOpenAIServer,
    server_url: str,
    node_modules: Path,
) -> None:
    cid = await chat.conversation(client)
    openai_server.script(Reply(text="Hi from the model to Node."))
    process = await asyncio.create_subprocess_exec(
        "node",
        str(CLIENT_JS),
        server_url,
        chat.account.token,
        cid,
        "hello from node",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"NODE_PATH": str(node_modules), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    out, err = await asyncio.wait_for(process.communicate(), 40)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0] == "Hi from the model to Node."
    assert lines[1].startswith("DONE ") and '"status":"ok"' in lines[1]
