"""Socket.IO clients that record every event they receive, including why they were disconnected."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import socketio

from tests.support.wait import eventually


class Recorder:
    """Collects every event of one namespace; `wait` blocks until one has arrived."""

    def __init__(self, client: socketio.AsyncClient) -> None:
        self.events: dict[str, list[Any]] = defaultdict(list)
        self.order: list[str] = []

        async def record(event: str, *args: Any) -> None:
            self.events[event].append(args[0] if args else None)
            self.order.append(event)

        client.on("*", record, namespace="/chat")

    async def wait(self, event: str, count: int = 1, *, deadline_s: float = 20) -> Any:
        async def arrived() -> bool:
            return len(self.events[event]) >= count

        await eventually(arrived, deadline_s=deadline_s)
        return self.events[event][count - 1]


# The issue asks for a disconnect within one second; tests wait on the condition with this
# deadline (one second plus a margin for a loaded machine), they never assert a duration.
DISCONNECT_DEADLINE_S = 3.0


@dataclass
class Socket:
    client: socketio.AsyncClient
    seen: Recorder
    disconnects: list[Any] = field(default_factory=list)

    async def call(self, event: str, data: Any = None, *, wait_s: float = 20) -> Any:
        return await self.client.call(event, data, namespace="/chat", timeout=wait_s)

    async def disconnected(self, *, after_s: float = 0) -> None:
        """Wait until the server disconnected the socket: within the issue's second (plus a
        margin) of the moment `after_s` from now when its authorization ends."""

        async def gone() -> bool:
            return bool(self.disconnects)

        await eventually(gone, deadline_s=after_s + DISCONNECT_DEADLINE_S)
