"""How a turn gets run: one interface, an in-process implementation (embedded mode).

`submit` claims the conversation first, so a second send while a turn runs is refused with 409
`turn_in_progress` before anything is written; then it stores the user message (through the
caller's callback) and starts the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from backend.chat.turns import TurnRunner
from backend.errors import Conflict

log = logging.getLogger("skillhive.chat")

StoreUserMessage = Callable[[], Awaitable[int]]


def turn_in_progress(conversation_id: str) -> Conflict:
    return Conflict(
        "a turn is already running in this conversation; wait for it or cancel it",
        code="turn_in_progress",
        details={"conversation_id": conversation_id},
    )


class TurnDispatcher(Protocol):
    async def submit(self, conversation_id: str, store_user_message: StoreUserMessage) -> int:
        """Claim the conversation, store the user message, start the turn; the message id."""
        ...

    async def cancel(self, conversation_id: str) -> bool:
        """Cancel the running turn; False when none runs."""
        ...

    async def aclose(self) -> None: ...


class InProcessDispatcher:
    def __init__(self, runner: TurnRunner) -> None:
        self.runner = runner
        self._claimed: set[str] = set()
        self._tasks: dict[str, asyncio.Task[object]] = {}
        self._turns: dict[str, int] = {}  # conversation id -> the user message being answered

    async def submit(self, conversation_id: str, store_user_message: StoreUserMessage) -> int:
        if conversation_id in self._claimed:
            raise turn_in_progress(conversation_id)
        self._claimed.add(conversation_id)  # no await between the check and the claim
        try:
            message_id = await store_user_message()
        except BaseException:
            self._claimed.discard(conversation_id)
            raise

        async def release() -> None:
            self._claimed.discard(conversation_id)

        task = asyncio.create_task(
            self.runner.run(conversation_id, message_id, release=release),
            name=f"turn:{conversation_id}",
        )
        self._tasks[conversation_id] = task
        self._turns[conversation_id] = message_id
        task.add_done_callback(lambda _: self._finished(conversation_id))
        return message_id

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
        if task is None or task.done():
            return False
        self.runner.request_cancel(self._turns[conversation_id])
        task.cancel()
        await asyncio.wait({task})  # the runner stores the cancelled answer before it ends
        return True

    async def aclose(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
