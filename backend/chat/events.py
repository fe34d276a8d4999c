"""Where a turn's events go: an event bus per conversation (SSE subscribers read it) and the
Socket.IO room. Both are `EventSink`s; the turn runner emits to each."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

from backend.db.models import Message

EventData = dict[str, Any]
TERMINAL = frozenset({"done", "error"})


class EventSink(Protocol):
    async def emit(self, conversation_id: str, event: EventData) -> None: ...


class EventBus(EventSink, Protocol):
    def subscribe(self, conversation_id: str) -> Any:
        """An async context manager yielding an async iterator of the conversation's events."""
        ...


class InMemoryEventBus:
    """Fan-out to the subscribers of one process (embedded mode)."""

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue[EventData]]] = {}

    async def emit(self, conversation_id: str, event: EventData) -> None:
        for queue in self._queues.get(conversation_id, ()):
            queue.put_nowait(event)

    @asynccontextmanager
    async def subscribe(self, conversation_id: str) -> AsyncIterator[AsyncIterator[EventData]]:
        queue: asyncio.Queue[EventData] = asyncio.Queue()
        self._queues.setdefault(conversation_id, set()).add(queue)

        async def events() -> AsyncIterator[EventData]:
            while True:
                yield await queue.get()

        try:
            yield events()
        finally:
            subscribers = self._queues.get(conversation_id, set())
            subscribers.discard(queue)
            if not subscribers:
                self._queues.pop(conversation_id, None)


def message_json(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "conversation_id": message.conversation_id,
        "role": message.role,
        "content": message.content,
        "status": message.status,
        "reply_to": message.reply_to,
        "tool_calls": message.tool_calls or [],
        "loaded_skills": message.loaded_skills,
        "usage": message.usage or {},
        "error": message.error,
        "created_at": message.created_at.isoformat(),
    }


# chat_shell event type -> Socket.IO event name (issue 5 wire names)
_SIO_NAMES = {
    "start": "chat:start",
    "token": "chat:chunk",
    "tool_start": "chat:tool",
    "tool_end": "chat:tool",
    "skill_loaded": "chat:skill_loaded",
    "skill_error": "chat:notice",
    "mcp_error": "chat:notice",
    "usage": "chat:usage",
    "done": "chat:done",
    "error": "chat:error",
}


def socketio_event(event: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = event["type"]
    data = {k: v for k, v in event.items() if k != "type"}
    if kind in ("tool_start", "tool_end"):
        data["phase"] = "start" if kind == "tool_start" else "end"
    elif kind in ("skill_error", "mcp_error"):
        data["kind"] = kind
    return _SIO_NAMES.get(kind, f"chat:{kind}"), data
