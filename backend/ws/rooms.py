"""Room names and emitters into them (used by turns, wherever they run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import socketio

from backend.chat.events import EventData, socketio_event

NAMESPACE = "/chat"


def conversation_room(conversation_id: str) -> str:
    return f"conversation:{conversation_id}"


def user_room(user_id: int) -> str:
    return f"user:{user_id}"


class SocketIOSink:
    """Turn events -> `chat:*` events in the conversation's room."""

    def __init__(self, server: socketio.AsyncServer | socketio.AsyncRedisManager) -> None:
        self.server = server

    async def emit(self, conversation_id: str, event: EventData) -> None:
        name, data = socketio_event(event)
        await self.server.emit(
            name, data, room=conversation_room(conversation_id), namespace=NAMESPACE
        )


class SocketIOFrontendChannel:
    """chat_shell's `FrontendChannel`: events for the browser (e.g. `skill:request`)."""

    def __init__(self, server: socketio.AsyncServer | socketio.AsyncRedisManager) -> None:
        self.server = server

    async def emit(self, conversation_id: str, event: str, data: Mapping[str, Any]) -> None:
        await self.server.emit(
            event, dict(data), room=conversation_room(conversation_id), namespace=NAMESPACE
        )
