"""What every client frame passes before a handler runs: reserved names, the event rate limit,
malformed or too deeply nested frames, and the origin check of the handshake."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import socketio
import websockets

from tests.support.accounts import Account
from tests.support.chat import ChatSetup


@pytest.fixture
def quiet_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Fails the test if anything logged an error or a traceback (the live server logs in this
    process)."""
    caplog.set_level(logging.INFO)
    yield caplog
    bad = [
        f"{r.name} {r.levelname}: {r.getMessage()}"
        for r in caplog.get_records("call")
        if r.levelno >= logging.ERROR or r.exc_info or r.exc_text
    ]
    assert bad == []


async def test_a_client_emitting_connect_cannot_switch_identity(
    client: httpx.AsyncClient, chat: ChatSetup, bob: Account, serve: Any, connect: Any
) -> None:
    url = serve()
    cid = await chat.conversation(client)
    sock = await connect(url, bob.token)
    for reserved in ("connect", "disconnect", "connect_error"):
        # the arguments python-socketio passes a connect handler: (environ, auth)
        refused = await sock.call(reserved, ({}, {"token": chat.account.token}), wait_s=5)
        assert refused["ok"] is False and refused["error"]["code"] == "unknown_event"
    still_bob = await sock.call("conversation:join", {"conversation_id": cid})
    assert still_bob["error"]["code"] == "conversation_not_found"
    assert not sock.disconnects


async def test_events_beyond_the_rate_limit_are_answered_rate_limited(
    alice: Account, serve: Any, connect: Any
) -> None:
    url = serve(socket_events_per_second=0.001, socket_event_burst=3)  # no refill in the test
    sock = await connect(url, alice.token)
    acks = [await sock.call("conversation:leave", {"conversation_id": "c"}) for _ in range(5)]
    assert acks[:3] == [{"ok": True}] * 3
    for ack in acks[3:]:
        assert ack["ok"] is False and ack["error"]["code"] == "rate_limited"
    assert not sock.disconnects


async def test_a_users_sockets_share_one_event_budget(
    alice: Account, bob: Account, serve: Any, connect: Any
) -> None:
    """Opening another socket buys no more events; another user's budget is their own."""
    url = serve(socket_events_per_second=0.001, socket_event_burst=3)
    first, second = await connect(url, alice.token), await connect(url, alice.token)
    leave = {"conversation_id": "c"}
    acks = [await sock.call("conversation:leave", leave) for sock in (first, second, first)]
    assert acks == [{"ok": True}] * 3
    for sock in (first, second):
        refused = await sock.call("conversation:leave", leave)
        assert refused["ok"] is False and refused["error"]["code"] == "rate_limited"
    others = await connect(url, bob.token)
    assert await others.call("conversation:leave", leave) == {"ok": True}


async def test_connections_beyond_the_users_limit_are_refused(
    alice: Account, bob: Account, serve: Any, connect: Any
) -> None:
    url = serve(socket_connections_per_user=2)
    first = await connect(url, alice.token)
    await connect(url, alice.token)
    with pytest.raises(socketio.exceptions.ConnectionError):  # why: the next test reads it
        await connect(url, alice.token)
    await connect(url, bob.token)  # another user's connections are their own
    await first.client.disconnect()
    again = await connect(url, alice.token)  # a closed socket frees its place
    assert await again.call("conversation:leave", {"conversation_id": "c"}) == {"ok": True}


async def test_a_refused_connection_tells_the_client_why(alice: Account, serve: Any) -> None:
    url = serve(socket_connections_per_user=1)
    held = await RawSocket.open(url, alice.token)
    ws_url = url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
    async with websockets.connect(ws_url) as ws:
        assert str(await ws.recv()).startswith("0{")
        await ws.send("40/chat," + json.dumps({"token": alice.token}))
        answer = str(await ws.recv())
    assert answer.startswith("44/chat,"), answer  # CONNECT_ERROR
    error = json.loads(answer[len("44/chat,") :])["data"]["error"]
    assert error["code"] == "too_many_connections" and error["details"] == {"limit": 1}
    await held.ws.close()


class RawSocket:
    """A WebSocket speaking Engine.IO/Socket.IO by hand, to send what no client library would."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, url: str, token: str) -> RawSocket:
        ws_url = url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
        raw = cls(await websockets.connect(ws_url))
        assert (await raw.recv()).startswith("0{")  # Engine.IO open
        await raw.ws.send("40/chat," + json.dumps({"token": token}))
        assert (await raw.recv()).startswith("40/chat,{")  # Socket.IO connect accepted
        return raw

    async def recv(self) -> str:
        frame = await self.ws.recv()
        return str(frame)

    async def ack(self, frame: str) -> Any:
        """Send a frame expecting an ack; the ack's payload."""
        await self.ws.send(frame)
        answer = await self.recv()
        assert answer.startswith("43/chat,"), answer
        return json.loads(answer[len("43/chat,") :].lstrip("0123456789"))[0]

    async def closed(self) -> bool:
        """The server closed the connection or the Engine.IO session (a CLOSE packet)."""
        try:
            return await asyncio.wait_for(self.ws.recv(), 5) == "1"
        except websockets.ConnectionClosed:
            return True
        except TimeoutError:
            return False


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "payload",
    [
        '["conversation:join",{"conversation_id":' + nested(40) + "}]",  # deeper than allowed
        '["conversation:join",' + nested(100_000) + "]",  # deeper than Python can parse
        '["conversation:join",{"conversation_id":"c"',  # not JSON
        "[]",  # no event name
        "{}",
        "[1,2]",  # a name that is not a string
    ],
)
async def test_bad_event_frames_are_refused_without_a_traceback(
    alice: Account, serve: Any, quiet_log: pytest.LogCaptureFixture, payload: str
) -> None:
    url = serve()
    raw = await RawSocket.open(url, alice.token)
    refused = await raw.ack("42/chat,7" + payload)
    assert refused["ok"] is False and refused["error"]["code"] == "invalid_frame"
    assert await raw.ack('42/chat,8["conversation:leave",{"conversation_id":"c"}]') == {"ok": True}
    await raw.ws.close()


@pytest.mark.parametrize(
    "frame",
    [
        "",
        "x",
        "4[[[",  # an Engine.IO message that is not a Socket.IO packet
        "4" + nested(100_000),
        "49zz",  # an unknown Socket.IO packet type
        "4x/chat,1[]",
        '451-/chat,1["conversation:join",{"_placeholder":true,"num":0}]',  # binary: not spoken
        b"\x00\x01",
        "42/chat," + "1" * 101 + '["conversation:leave",{"conversation_id":"c"}]',  # ack id
    ],
)
async def test_malformed_frames_close_the_connection_without_a_traceback(
    alice: Account, serve: Any, quiet_log: pytest.LogCaptureFixture, frame: str | bytes
) -> None:
    url = serve()
    raw = await RawSocket.open(url, alice.token)
    await raw.ws.send(frame)
    assert await raw.closed()
    again = await RawSocket.open(url, alice.token)  # the server is fine
    leave = '42/chat,1["conversation:leave",{"conversation_id":"c"}]'
    assert await again.ack(leave) == {"ok": True}
    await again.ws.close()


async def test_a_malformed_polling_payload_is_refused_without_a_traceback(
    alice: Account, serve: Any, quiet_log: pytest.LogCaptureFixture
) -> None:
    url = serve()
    async with httpx.AsyncClient(base_url=url + "/socket.io/") as polling:
        opened = await polling.get("", params={"EIO": "4", "transport": "polling"})
        sid = json.loads(opened.text[1:])["sid"]
        params = {"EIO": "4", "transport": "polling", "sid": sid}
        assert (await polling.post("", params=params, content="x")).status_code == 400


async def handshake(url: str, origin: str | None) -> int:
    headers = {"Origin": origin} if origin else {}
    params = {"EIO": "4", "transport": "polling"}
    async with httpx.AsyncClient() as http:
        response = await http.get(url + "/socket.io/", params=params, headers=headers)
    return response.status_code


async def test_an_empty_origin_list_means_same_origin_only(serve: Any) -> None:
    url = serve(cors_origins=[])
    assert await handshake(url, "http://evil.example") == 400
    assert await handshake(url, url) == 200  # the page the gateway serves itself
    assert await handshake(url, None) == 200  # not a browser: no origin to check
    ws_url = url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
    with pytest.raises(websockets.InvalidStatus):
        await websockets.connect(ws_url, origin=websockets.Origin("http://evil.example"))


async def test_listed_origins_are_allowed_and_others_refused(serve: Any) -> None:
    url = serve(cors_origins=["http://app.example"])
    assert await handshake(url, "http://app.example") == 200
    assert await handshake(url, "http://evil.example") == 400


@pytest.mark.parametrize("redis", [False, True], ids=["embedded", "redis"])
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
async def test_a_skill_response_with_a_non_json_number_is_refused_with_a_code(
    alice: Account,
    serve: Any,
    redis_server: Any,
    quiet_log: pytest.LogCaptureFixture,
    redis: bool,
    number: str,
) -> None:
    """Python's JSON reads NaN and Infinity, which no JSON document may hold: an answer carrying
    one is refused with a stable code, never `internal_error` with a traceback."""
    url = serve(redis_url=redis_server.url) if redis else serve()
    raw = await RawSocket.open(url, alice.token)
    answer = '{"request_id":"r1","success":true,"result":{"x":' + number + "}}"
    refused = await raw.ack('42/chat,3["skill:response",' + answer + "]")
    assert refused["ok"] is False and refused["error"]["code"] == "invalid_frame", refused
    assert await raw.ack('42/chat,4["conversation:leave",{"conversation_id":"c"}]') == {"ok": True}
    await raw.ws.close()


async def test_a_skill_response_while_redis_is_down_is_answered_unavailable(
    alice: Account, serve: Any, redis_server: Any, quiet_log: pytest.LogCaptureFixture
) -> None:
    """The registry cannot reach Redis: the browser is told to retry (503's code), not
    `internal_error` with a traceback."""
    url = serve(redis_url=redis_server.url)
    raw = await RawSocket.open(url, alice.token)
    redis_server.stop()
    answer = '{"request_id":"r1","success":true,"result":null}'
    refused = await raw.ack('42/chat,3["skill:response",' + answer + "]")
    assert refused["ok"] is False and refused["error"]["code"] == "pending_unavailable", refused
    redis_server.start()
    await raw.ws.close()
