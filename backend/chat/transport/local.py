"""`LocalTransport` (embedded mode): turns run as tasks of this process, envelopes fan out in
memory, the conversation claim is a set, browser requests wait in an in-memory registry."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from backend.chat.transport.base import (
    Fanout,
    Listener,
    StoreUserMessage,
    TransportFrontend,
    turn_in_progress,
)
from backend.chat.transport.envelope import Envelope, TurnEnvelope
from chat_shell import InMemoryPendingRequestRegistry

log = logging.getLogger("skillhive.chat")


class TurnRunning(Protocol):
    """What runs a turn (`TurnRunner`): `release` frees the claim before the end is announced."""

    async def run(
        self,
        conversation_id: str,
        message_id: int,
        *,
        release: Callable[[], Awaitable[None]] | None = None,
    ) -> Any: ...

    def request_cancel(self, message_id: int) -> None: ...


class LocalTransport:
    def __init__(self) -> None:
        self._fanout = Fanout()
        self.registry = InMemoryPendingRequestRegistry(TransportFrontend(self))
        self.runner: TurnRunning | None = None  # attached by the composition root
        self._claimed: set[str] = set()
        self._tasks: dict[str, asyncio.Task[object]] = {}
        self._turns: dict[str, int] = {}  # conversation id -> the user message being answered

    def attach(self, runner: TurnRunning) -> None:
        self.runner = runner

    async def submit(
        self, conversation_id: str, user_id: int, store_user_message: StoreUserMessage
    ) -> int:
        assert self.runner is not None, "the composition root attaches a runner"
        if conversation_id in self._claimed:
            raise turn_in_progress(conversation_id)
        self._claimed.add(conversation_id)  # no await between the check and the claim
        try:
            message_id = await store_user_message()
        except BaseException:
            self._claimed.discard(conversation_id)
            raise

        async def release() -> None:
            await self.release(conversation_id, message_id)

        task = asyncio.create_task(
            self.runner.run(conversation_id, message_id, release=release),
            name=f"turn:{conversation_id}",
        )
        self._tasks[conversation_id] = task
        self._turns[conversation_id] = message_id
        task.add_done_callback(lambda _: self._finished(conversation_id))
        return message_id

    async def release(self, conversation_id: str, message_id: int) -> None:
        self._claimed.discard(conversation_id)

    def running(self, conversation_id: str) -> bool:
        """Whether the conversation's claim is held (a turn is starting or running)."""
        return conversation_id in self._claimed

    def _finished(self, conversation_id: str) -> None:
        self._claimed.discard(conversation_id)
        self._turns.pop(conversation_id, None)
        task = self._tasks.pop(conversation_id, None)
        if task is not None and not task.cancelled() and task.exception() is not None:
            log.error("turn task failed", exc_info=task.exception())

    async def cancel(self, conversation_id: str) -> bool:
        task = self._tasks.get(conversation_id)
        if task is None or task.done() or self.runner is None:
            return False
        self.runner.request_cancel(self._turns[conversation_id])
        task.cancel()
        await asyncio.wait({task})  # the runner stores the cancelled answer before it ends
        return True

    async def publish(self, envelope: Envelope) -> None:
        await self._fanout.deliver(envelope)

    def subscribe(
        self, conversation_id: str, *, ends_only: bool = False
    ) -> AbstractAsyncContextManager[AsyncIterator[TurnEnvelope]]:
        return self._fanout.subscribe(conversation_id, ends_only=ends_only)

    def listen(self, listener: Listener) -> None:
        self._fanout.listen(listener)

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
