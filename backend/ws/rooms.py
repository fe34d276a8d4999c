"""Room names, and the Socket.IO edge of turns: envelopes -> `chat:*` events in rooms.

Each gateway emits the envelopes its transport delivers to its own sockets only: in Redis mode
every gateway receives every envelope once (`RedisTransport`), so nothing is republished.
"""

from __future__ import annotations

from typing import Any

import engineio
import socketio
from socketio import packet

from backend.chat.transport.envelope import BrowserEvent, Envelope, TurnEnded, TurnEvent

NAMESPACE = "/chat"

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
}


def conversation_room(conversation_id: str) -> str:
    return f"conversation:{conversation_id}"


def user_room(user_id: int) -> str:
    return f"user:{user_id}"


def socketio_event(envelope: Envelope) -> tuple[str, dict[str, Any]]:
    """The Socket.IO event (name, data) of an envelope."""
    if isinstance(envelope, BrowserEvent):
        return envelope.name, dict(envelope.data)
    tags = {"conversation_id": envelope.conversation_id, "message_id": envelope.message_id}
    if isinstance(envelope, TurnEnded):
        reply = envelope.reply.model_dump(mode="json") if envelope.reply is not None else None
        if envelope.error is None:
            return "chat:done", {"message": reply, **tags}
        return "chat:error", {
            "code": envelope.error.code,
            "message": envelope.error.message,
            "reply": reply,
            **tags,
        }
    return _progress(envelope, tags)


def _progress(envelope: TurnEvent, tags: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    event = envelope.event
    data = event.model_dump(mode="json", exclude={"type"})
    if event.type in ("tool_start", "tool_end"):
        data["phase"] = "start" if event.type == "tool_start" else "end"
    elif event.type in ("skill_error", "mcp_error"):
        data["kind"] = event.type
    return _SIO_NAMES.get(event.type, f"chat:{event.type}"), {**data, **tags}


class SocketIORooms:
    """A transport listener: emits each envelope to the conversation's room on this gateway."""

    def __init__(self, server: socketio.AsyncServer) -> None:
        self.server = server

    async def deliver(self, envelope: Envelope) -> None:
        room = conversation_room(envelope.conversation_id)
        recipients = [
            eio_sid for _, eio_sid in self.server.manager.get_participants(NAMESPACE, room)
        ]
        # No socket of this gateway in the room (a REST turn, or a room on another gateway):
        # nothing to serialize the event for.
        if not recipients:
            return
        name, data = socketio_event(envelope)
        # What the server's `emit` sends, encoded once and queued to each socket in turn: its
        # emit sends to every recipient from a task of its own and waits for them all, three
        # turns of the event loop for each event of a turn. Queuing never blocks.
        encoded = self.server.packet_class(
            packet.EVENT, namespace=NAMESPACE, data=[name, data]
        ).encode()
        message = engineio.packet.Packet(engineio.packet.MESSAGE, encoded)
        for eio_sid in recipients:
            await self.server.eio.send_packet(eio_sid, message)
