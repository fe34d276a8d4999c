"""A `TurnWorker` bench on real Redis with a scripted runner the test lets finish or cancels."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import redis.asyncio as aioredis

from backend.chat.transport import RedisKeys
from backend.worker import TurnWorker


@dataclass
class ScriptedRunner:
    """Runs a turn until the test lets it end (`finish`) or it is cancelled."""

    started: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    cancel_requests: list[int] = field(default_factory=list)
    gates: dict[int, asyncio.Event] = field(default_factory=dict)

    def gate(self, message_id: int) -> asyncio.Event:
        return self.gates.setdefault(message_id, asyncio.Event())

    def finish(self, message_id: int) -> None:
        self.gate(message_id).set()

    async def run(
        self,
        conversation_id: str,
        message_id: int,
        *,
        release: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.started.append(message_id)
        try:
            await self.gate(message_id).wait()
        except asyncio.CancelledError:
            self.cancelled.append(message_id)  # the real runner stores `cancelled` and ends
        if release is not None:
            await release()

    def request_cancel(self, message_id: int) -> None:
        self.cancel_requests.append(message_id)


@dataclass
class Bench:
    redis: aioredis.Redis
    keys: RedisKeys
    runner: ScriptedRunner
    workers: list[tuple[TurnWorker, asyncio.Task[None]]] = field(default_factory=list)

    async def submit(self, message_id: int, user: int = 1, conversation: str = "") -> str:
        conversation = conversation or f"c{message_id}"
        await self.redis.set(self.keys.lock(conversation), str(message_id))
        fields = {"conversation_id": conversation, "message_id": message_id, "user_id": user}
        entry: bytes = await self.redis.xadd(self.keys.stream, fields)  # type: ignore[arg-type]
        return entry.decode()

    def start(self, **kwargs: float) -> TurnWorker:
        options = {"concurrency": 4, "lease_s": 0.5, **kwargs}
        worker = TurnWorker(
            self.redis,
            self.runner,
            concurrency=int(options.pop("concurrency")),
            user_slots=int(options.pop("user_slots", 0)) or None,
            keys=self.keys,
            drain_s=0,
            **options,
        )
        self.workers.append((worker, asyncio.create_task(worker.run())))
        return worker

    async def pending(self) -> int:
        info = await self.redis.xpending(self.keys.stream, self.keys.group)
        return int(info["pending"])
