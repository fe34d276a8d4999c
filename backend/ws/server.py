"""The gateway's Socket.IO server: python-socketio's, with the checks every client frame passes
before a handler runs.

- Frames: see `frames.py` (malformed ones close the connection with one log line).
- Events: a JSON array `[name, data?]`; reserved names (`connect`, `disconnect`, ...) are refused,
  since python-socketio would dispatch them to the connect/disconnect handlers (emitting
  `connect` re-ran authentication on a live socket and could switch its identity).
- A token bucket per user (all of the user's sockets on this gateway together, so opening more
  sockets buys no more events) answers `rate_limited` beyond `socket_events_per_second`.
- Authorization stays live (`live_auth.py`): an event of a socket whose token or user stopped
  being authorized is refused with REST's code, then the socket is ended.
Refusals are acks in the handlers' shape: `{"ok": false, "error": {code, message, details}}`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import socketio
from socketio import packet

from backend.config import Settings
from backend.errors import InvalidRequest, ServiceUnavailable, SkillhiveError
from backend.ws.frames import MAX_DEPTH, ClientPacket, close_session, guard_transports
from backend.ws.live_auth import LiveAuth
from backend.ws.rooms import NAMESPACE

log = logging.getLogger("skillhive.ws")

RESERVED_EVENTS = frozenset(
    {"connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener"}
)
_CLIENT_PACKETS = {packet.CONNECT, packet.DISCONNECT, packet.EVENT, packet.ACK}
_SWEEP_FLOOR = 1024  # buckets kept before the first sweep for full ones


def _rate_limited(retry_after: float) -> SkillhiveError:
    return SkillhiveError(
        "too many events; slow down",
        code="rate_limited",
        status_code=429,
        details={"retry_after": round(retry_after, 3)},
    )


def _invalid_frame() -> InvalidRequest:
    return InvalidRequest(
        f"an event is a JSON array [name, data] nested at most {MAX_DEPTH} levels deep",
        code="invalid_frame",
    )


@dataclass
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """A token bucket per key: `burst` events at once, then `rate` per second.

    A bucket that has refilled is the same as a new one, so buckets are dropped once full
    (swept when their number doubles): memory follows the keys active lately, and forgetting
    a key never hands it more events than it would have had."""

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[Hashable, _Bucket] = {}
        self._sweep_at = _SWEEP_FLOOR

    def take(self, key: Hashable) -> float:
        """0 when an event may pass (and counts it), else the seconds until one may."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._sweep_at:
                self._sweep(now)
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate

    def __len__(self) -> int:
        return len(self._buckets)

    def _sweep(self, now: float) -> None:
        full = [
            key
            for key, bucket in self._buckets.items()
            if bucket.tokens + (now - bucket.at) * self.rate >= self.burst
        ]
        for key in full:
            del self._buckets[key]
        self._sweep_at = max(_SWEEP_FLOOR, 2 * len(self._buckets))


class SocketServer(socketio.AsyncServer):  # type: ignore[misc]
    def __init__(
        self, settings: Settings, client_manager: socketio.AsyncManager | None = None
    ) -> None:
        super().__init__(
            async_mode="asgi",
            client_manager=client_manager,
            # python-engineio checks no origin at all for []; None is its "same origin only".
            cors_allowed_origins=settings.cors_origins or None,
            namespaces=[NAMESPACE],
            serializer=ClientPacket,
        )
        # The manager's messages come from our own processes: no client bounds on them.
        self.manager.json = json
        guard_transports(self.eio)
        self.live_auth = LiveAuth(self, settings)
        self.rates = RateLimiter(settings.socket_events_per_second, settings.socket_event_burst)

    async def _handle_eio_message(self, eio_sid: str, data: Any) -> None:
        # python-socketio's dispatch, minus binary packets (not part of our protocol), with
        # undecodable packets refused instead of raising (which logs a traceback).
        try:
            pkt = self.packet_class(encoded_packet=data)
            if pkt.packet_type not in _CLIENT_PACKETS:
                raise ValueError(f"packet type {pkt.packet_type} is not accepted")
        except (ValueError, TypeError) as exc:
            log.warning("closed Socket.IO connection %s: malformed packet (%s)", eio_sid, exc)
            await close_session(self.eio, eio_sid)
            return
        if pkt.packet_type == packet.CONNECT:
            await self._handle_connect(eio_sid, pkt.namespace, pkt.data)
        elif pkt.packet_type == packet.DISCONNECT:
            await self._handle_disconnect(eio_sid, pkt.namespace, self.reason.CLIENT_DISCONNECT)
        elif pkt.packet_type == packet.EVENT:
            await self._handle_event(eio_sid, pkt.namespace, pkt.id, pkt.data)
        else:
            await self._handle_ack(eio_sid, pkt.namespace, pkt.id, pkt.data)

    async def _handle_event(self, eio_sid: str, namespace: str | None, id: Any, data: Any) -> None:
        namespace = namespace or "/"
        sid = self.manager.sid_from_eio_sid(eio_sid, namespace)
        if not self.manager.is_connected(sid, namespace):  # python-socketio drops it
            await super()._handle_event(eio_sid, namespace, id, data)
            return
        refused = self._screen(self.live_auth.rate_key(sid), data)
        if refused is None:
            await super()._handle_event(eio_sid, namespace, id, data)
        else:
            await self._refuse(eio_sid, namespace, id, refused)

    def _screen(self, rate_key: Hashable, data: Any) -> SkillhiveError | None:
        wait = self.rates.take(rate_key)
        if wait:
            return _rate_limited(wait)
        if not (isinstance(data, list) and data and isinstance(data[0], str)):
            return _invalid_frame()
        if data[0] in RESERVED_EVENTS:
            return InvalidRequest(
                f"{data[0]!r} is reserved; clients cannot send it", code="unknown_event"
            )
        return None

    async def _handle_event_internal(
        self, server: Any, sid: str, eio_sid: str, data: Any, namespace: str, id: Any
    ) -> None:
        try:
            refused = await self.live_auth.check(sid)
        except Exception:
            log.exception("checking the authorization of socket %s failed", sid)
            unavailable = ServiceUnavailable("authorization could not be checked; retry")
            await self._refuse(eio_sid, namespace, id, unavailable)
            return
        if refused is None:
            await super()._handle_event_internal(server, sid, eio_sid, data, namespace, id)
            return
        await self._refuse(eio_sid, namespace, id, refused)
        await self.live_auth.end(sid)  # after the refusal's ack: the client reads why first

    async def _refuse(self, eio_sid: str, namespace: str, id: Any, error: SkillhiveError) -> None:
        if id is None:  # the client asked for no ack
            return
        ack = self.packet_class(
            packet.ACK, namespace=namespace, id=id, data=[{"ok": False, **error.to_dict()}]
        )
        await self._send_packet(eio_sid, ack)


def socketio_server(settings: Settings) -> SocketServer:
    """The gateway's Socket.IO server. Its rooms are local: with Redis, each gateway hears every
    turn envelope once from its transport and emits to its own sockets (`SocketIORooms`)."""
    return SocketServer(settings)
