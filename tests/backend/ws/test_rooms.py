"""SocketIORooms: an envelope becomes an event only for a room this gateway has sockets in."""

from __future__ import annotations

from typing import Any

import socketio

from backend.chat.transport.envelope import TurnEvent
from backend.ws.rooms import NAMESPACE, SocketIORooms, conversation_room
from chat_shell import TokenEvent


class RecordingServer(socketio.AsyncServer):  # type: ignore[misc]
    """A real server whose emits are recorded instead of sent (no client is connected)."""

    def __init__(self) -> None:
        super().__init__(async_mode="asgi")
        self.emitted: list[tuple[str, dict[str, Any], str]] = []

    async def emit(self, event: str, data: Any = None, **kwargs: Any) -> None:
        self.emitted.append((event, data, kwargs["room"]))


def token(conversation_id: str) -> TurnEvent:
    return TurnEvent(conversation_id=conversation_id, message_id=7, event=TokenEvent(delta="hi"))


async def test_an_event_is_emitted_to_a_room_with_sockets_and_skipped_for_an_empty_one() -> None:
    server = RecordingServer()
    rooms = SocketIORooms(server)
    sid = await server.manager.connect("eio-1", NAMESPACE)
    await server.manager.enter_room(sid, NAMESPACE, conversation_room("joined"))
    await rooms.deliver(token("joined"))
    await rooms.deliver(token("nobody-here"))  # e.g. a REST turn: nothing to serialize
    assert server.emitted == [
        (
            "chat:chunk",
            {"delta": "hi", "conversation_id": "joined", "message_id": 7},
            conversation_room("joined"),
        )
    ]
    await server.manager.leave_room(sid, NAMESPACE, conversation_room("joined"))
    await rooms.deliver(token("joined"))
    assert len(server.emitted) == 1
