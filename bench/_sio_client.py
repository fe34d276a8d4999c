"""The least a Socket.IO client does, for timing the gateway's Socket.IO turns (bench/chat.py).

Engine.IO 4 over one websocket (aiohttp), Socket.IO 5 text packets in the `/chat` namespace:
connect with `auth`, `call` an event and wait for its ack, and the end of a conversation's turn
(`chat:done` / `chat:error`). Every other event is read and dropped without decoding. The
python-socketio client decodes each event and dispatches it through its handler machinery:
about half a millisecond of this process's CPU per turn, which is the client's cost, not the
gateway's (the benchmark prints both clients side by side).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import aiohttp

_PREFIX = "/chat,"
_CONNECT, _EVENT, _ACK, _CONNECT_ERROR = "40", "42", "43", "44"
_ENDS = ('["chat:done"', '["chat:error"')


class WireSocket:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self._acks: dict[int, asyncio.Future[Any]] = {}
        self._ends: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None

    async def connect(self, session: aiohttp.ClientSession) -> None:
        ws_url = self.url.replace("http", "ws", 1) + "/socket.io/?EIO=4&transport=websocket"
        self._ws = ws = await session.ws_connect(ws_url)
        opened = await ws.receive_str()
        if not opened.startswith("0"):
            raise RuntimeError(f"not an Engine.IO open packet: {opened[:80]}")
        await ws.send_str(_CONNECT + _PREFIX + json.dumps({"token": self.token}))
        while True:
            packet = await ws.receive_str()
            if packet.startswith(_CONNECT + _PREFIX):
                break
            if packet.startswith(_CONNECT_ERROR):
                raise RuntimeError(f"connect refused: {packet[:200]}")
        self._reader = asyncio.create_task(self._read(ws))

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for message in ws:
            data = message.data
            if data == "2":  # Engine.IO ping
                await ws.send_str("3")
            elif data.startswith(_ACK + _PREFIX):
                body = data[len(_ACK + _PREFIX) :]
                digits = len(body) - len(body.lstrip("0123456789"))
                waiter = self._acks.pop(int(body[:digits]), None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(json.loads(body[digits:])[0])
            elif data.startswith(_EVENT + _PREFIX) and data[len(_EVENT + _PREFIX) :].startswith(
                _ENDS
            ):
                name, payload = json.loads(data[len(_EVENT + _PREFIX) :])
                end = self._ends.pop(payload.get("conversation_id") or "", None)
                if end is not None and not end.done():
                    end.set_result({**payload, "ok": name == "chat:done"})
        for waiter in [*self._acks.values(), *self._ends.values()]:
            if not waiter.done():
                waiter.set_exception(ConnectionError("the socket closed"))

    async def call(self, event: str, data: dict[str, Any]) -> Any:
        assert self._ws is not None, "connect() first"
        self._next_id += 1
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._acks[self._next_id] = waiter
        await self._ws.send_str(f"{_EVENT}{_PREFIX}{self._next_id}" + json.dumps([event, data]))
        return await asyncio.wait_for(waiter, 30)

    async def turn(self, cid: str, content: str = "hello") -> dict[str, Any]:
        """Send a message and wait for its turn's end: its `chat:done` (`ok`) or `chat:error`."""
        end: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._ends[cid] = end
        ack = await self.call("chat:send", {"conversation_id": cid, "content": content})
        if not ack.get("ok"):
            self._ends.pop(cid, None)
            raise RuntimeError(f"chat:send refused: {ack}")
        return await asyncio.wait_for(end, 30)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
