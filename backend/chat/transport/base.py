"""The `TurnTransport` seam: how a turn gets from a send to whoever runs it, and its events back.

One transport owns four things: submitting and cancelling turns; publishing and subscribing to
turn envelopes; the pending-request registry (skill tools waiting for a browser); the
conversation claim (one turn at a time per conversation). `LocalTransport` does it in one
process, `RedisTransport` across gateways and workers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from backend.chat.transport.envelope import BrowserEvent, Envelope, TurnEnded, TurnEnvelope
from backend.errors import Conflict
from chat_shell import PendingRequestRegistry

log = logging.getLogger("skillhive.chat")

StoreUserMessage = Callable[[], Awaitable[int]]
Listener = Callable[[Envelope], Awaitable[None]]


def turn_in_progress(conversation_id: str) -> Conflict:
    return Conflict(
        "a turn is already running in this conversation; wait for it or cancel it",
        code="turn_in_progress",
        details={"conversation_id": conversation_id},
    )


class TurnTransport(Protocol):
    @property
    def registry(self) -> PendingRequestRegistry:
        """Where skill tools wait for a browser's `skill:response`."""
        ...

    async def submit(
        self, conversation_id: str, user_id: int, store_user_message: StoreUserMessage
    ) -> int:
        """Claim the conversation (409 `turn_in_progress` if claimed), store the user message,
        start the turn; the message id."""
        ...

    async def cancel(self, conversation_id: str) -> bool:
        """Cancel the running turn; False when none runs."""
        ...

    async def release(self, conversation_id: str, message_id: int) -> None:
        """Free the conversation's claim held by the turn answering `message_id`."""
        ...

    async def publish(self, envelope: Envelope) -> None:
        """Send an envelope to every subscriber and listener, wherever they are, once."""
        ...

    def subscribe(
        self, conversation_id: str, *, ends_only: bool = False
    ) -> AbstractAsyncContextManager[AsyncIterator[TurnEnvelope]]:
        """The conversation's turn envelopes from the moment the block is entered; with
        `ends_only`, only its `TurnEnded` ones (a caller waiting for the answer alone)."""
        ...

    def listen(self, listener: Listener) -> None:
        """Call `listener` with every envelope this process receives (the Socket.IO edge)."""
        ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


class Fanout:
    """Delivery to the subscribers and listeners of this process."""

    def __init__(self) -> None:
        # conversation id -> its subscribers' queues, each with whether it wants ends only
        self._queues: dict[str, dict[asyncio.Queue[TurnEnvelope], bool]] = {}
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def deliver(self, envelope: Envelope) -> None:
        if not isinstance(envelope, BrowserEvent):
            ended = isinstance(envelope, TurnEnded)
            for queue, ends_only in self._queues.get(envelope.conversation_id, {}).items():
                if ended or not ends_only:  # no wake-up of a waiter for what it skips
                    queue.put_nowait(envelope)
        for listener in self._listeners:
            try:
                await listener(envelope)
            except Exception:  # a broken listener must not break the turn
                log.exception("turn listener %r failed", listener)

    @asynccontextmanager
    async def subscribe(
        self, conversation_id: str, *, ends_only: bool = False
    ) -> AsyncIterator[AsyncIterator[TurnEnvelope]]:
        queue: asyncio.Queue[TurnEnvelope] = asyncio.Queue()
        self._queues.setdefault(conversation_id, {})[queue] = ends_only

        async def envelopes() -> AsyncIterator[TurnEnvelope]:
            while True:
                yield await queue.get()

        try:
            yield envelopes()
        finally:
            subscribers = self._queues.get(conversation_id, {})
            subscribers.pop(queue, None)
            if not subscribers:
                self._queues.pop(conversation_id, None)


class TransportFrontend:
    """chat_shell's `FrontendChannel` over a transport: browser events become envelopes."""

    def __init__(self, transport: TurnTransport) -> None:
        self.transport = transport

    async def emit(self, conversation_id: str, event: str, data: Mapping[str, Any]) -> None:
        await self.transport.publish(
            BrowserEvent(conversation_id=conversation_id, name=event, data=dict(data))
        )
