"""What a client frame must look like before python-engineio/python-socketio parse it.

The libraries log a traceback for frames they cannot parse (an unknown packet type, bad JSON, a
payload nested deeper than Python recurses) and keep binary attachments in memory until they all
arrive. Our protocol is JSON events only, so a frame is refused, with one log line and the
connection closed, unless it is one an Engine.IO/Socket.IO client sends for JSON events; event
payloads are decoded with a nesting bound (a too deep event is answered `invalid_frame`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import engineio
from engineio import exceptions as engineio_exceptions
from engineio import json as engineio_json
from engineio import payload as engineio_payload
from engineio.async_drivers import asgi
from socketio import packet as socketio_packet

log = logging.getLogger("skillhive.ws")

MAX_DEPTH = 32  # JSON nesting of an event frame: ours need a handful
MAX_PACKETS_PER_POST = engineio_payload.Payload.max_decode_packets
# Engine.IO packets a client sends that carry no payload (`2probe` opens a WebSocket upgrade).
_CONTROL = frozenset({"1", "2", "2probe", "3", "3probe", "5", "6"})
# Socket.IO packet types a client may send us: CONNECT, DISCONNECT, EVENT, ACK (no binary).
_SOCKETIO_TYPES = frozenset("0123")


class FrameRefused(ValueError):
    pass


def frame_problem(frame: str | bytes, max_bytes: int) -> str | None:
    """Why an Engine.IO frame (one WebSocket message or one packet of a polling POST) is
    refused, or None. A message must carry a Socket.IO packet of a JSON type."""
    if isinstance(frame, bytes):
        return "binary frames are not accepted"
    if len(frame) > max_bytes:
        return "frame too large"
    if frame in _CONTROL:
        return None
    if frame[:1] != "4":
        return "not an Engine.IO packet a client sends"
    if frame[1:2] not in _SOCKETIO_TYPES:
        return "not a Socket.IO packet of a JSON type"
    return None


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class BoundedJson:
    """The `json` of client packets: integers of at most 100 digits (python-engineio's rule), at
    most `MAX_DEPTH` levels of nesting, and no NaN or Infinity (Python's reader takes them, no
    JSON document holds them: an answer carrying one could not be stored or sent on)."""

    dumps = staticmethod(json.dumps)

    @staticmethod
    def loads(text: str | bytes, **kwargs: Any) -> Any:
        try:
            value = engineio_json.loads(text, parse_constant=_no_constant, **kwargs)
        except RecursionError:
            raise FrameRefused("nested too deeply") from None
        except ValueError as exc:
            raise FrameRefused(f"not JSON: {exc}") from None
        if isinstance(value, dict | list) and _depth_exceeds(value, MAX_DEPTH):
            raise FrameRefused(f"nested deeper than {MAX_DEPTH}")
        return value


class ClientPacket(socketio_packet.Packet):  # type: ignore[misc]
    """A Socket.IO packet whose payload failed to decode keeps its header (type, namespace, ack
    id) with `data = None`, so an event can still be answered `invalid_frame`."""

    json = BoundedJson
    # JSON events only (frames of the binary types are refused above): no walk through every
    # outgoing payload looking for bytes, which cost each emitted event more than encoding it.
    uses_binary_events = False

    def decode(self, encoded_packet: str | bytes) -> int:
        try:
            return int(super().decode(encoded_packet) or 0)
        except FrameRefused as exc:
            log.info("refused a Socket.IO payload: %s", exc)
            self.data = None
            return 0


def _refuse(problem: str) -> None:
    log.warning("closed an Engine.IO connection: %s", problem)


class _GuardedWebSocket(asgi.WebSocket):  # type: ignore[misc]
    def __init__(self, handler: Any, server: Any) -> None:
        super().__init__(handler, server)
        self.max_bytes = int(server.max_http_buffer_size)

    async def wait(self) -> str | bytes:
        frame: str | bytes = await super().wait()
        problem = frame_problem(frame, self.max_bytes)
        if problem is not None:
            _refuse(problem)
            raise OSError(problem)  # python-engineio closes the connection, without a traceback
        return frame


class _Refused(engineio_exceptions.EngineIOError):  # type: ignore[misc]
    """python-engineio answers a polling POST that raises this 400 (no traceback)."""


async def close_session(eio: engineio.AsyncServer, eio_sid: str) -> None:
    """Close an Engine.IO session without waiting for the client to collect the CLOSE packet
    (`AsyncServer.disconnect` waits for the next poll of a long-polling client)."""
    socket = eio.sockets.get(eio_sid)
    if socket is not None:
        await socket.close(wait=False)


def _post_problem(body: bytes, max_bytes: int) -> str | None:
    """Why a polling POST body (packets separated by 0x1e) is refused, or None."""
    try:
        frames = body.decode("utf-8").split("\x1e") if body else []
    except UnicodeDecodeError:
        return "not UTF-8"
    if len(frames) > MAX_PACKETS_PER_POST:
        return "too many packets in one POST"
    return next((p for f in frames if (p := frame_problem(f, max_bytes)) is not None), None)


class _GuardedBody:
    def __init__(self, body: Any, eio: engineio.AsyncServer, eio_sid: str) -> None:
        self.body = body
        self.eio = eio
        self.eio_sid = eio_sid

    async def read(self, length: int | None = None) -> bytes:
        raw: bytes = await self.body.read(length)
        problem = _post_problem(raw, int(self.eio.max_http_buffer_size))
        if problem is not None:
            _refuse(problem)
            await close_session(self.eio, self.eio_sid)
            raise _Refused(problem)
        return raw


def guard_transports(eio: engineio.AsyncServer) -> None:
    """Check every frame a client sends, over WebSocket and long-polling, before python-engineio
    decodes it (the ASGI driver is python-engineio's hook for transports)."""
    translate: Callable[..., Awaitable[dict[str, Any]]] = eio._async["translate_request"]

    async def translate_request(*args: Any) -> dict[str, Any]:
        environ = await translate(*args)
        if environ.get("REQUEST_METHOD") == "POST":
            eio_sid = parse_qs(environ.get("QUERY_STRING", "")).get("sid", [""])[0]
            environ["wsgi.input"] = _GuardedBody(environ["wsgi.input"], eio, eio_sid)
        return environ

    eio._async = {
        **eio._async,
        "translate_request": translate_request,
        "websocket": _GuardedWebSocket,
    }
