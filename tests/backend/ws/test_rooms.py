"""SocketIORooms: an envelope becomes an event only for a room this gateway has sockets in."""

from __future__ import annotations

from typing import Any

import socketio

from backend.chat.transport.envelope import TurnEvent
from backend.ws.rooms import NAMESPACE, SocketIORooms, conversation_room
from chat_shell import TokenEvent


class RecordingServer(socketio.AsyncServer):  # type: ignore[misc]
    """A real server whose Engine.IO packets are recorded instead of sent (no client is
    connected): (Engine.IO session, event name, data)."""

    def __init__(self) -> None:
        super().__init__(async_mode="asgi")
        self.emitted: list[tuple[str, str, dict[str, Any]]] = []

        async def send_packet(eio_sid: str, pkt: Any) -> None:
            decoded = socketio.packet.Packet(encoded_packet=pkt.data)
            assert decoded.namespace == NAMESPACE
            self.emitted.append((eio_sid, *decoded.data))

        self.eio.send_packet = send_packet


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
        ("eio-1", "chat:chunk", {"delta": "hi", "conversation_id": "joined", "message_id": 7})
    ]
    await server.manager.leave_room(sid, NAMESPACE, conversation_room("joined"))
    await rooms.deliver(token("joined"))
    assert len(server.emitted) == 1


async def test_every_socket_in_the_room_gets_the_event_once() -> None:
    server = RecordingServer()
    rooms = SocketIORooms(server)
    for eio_sid in ("eio-1", "eio-2"):
        sid = await server.manager.connect(eio_sid, NAMESPACE)
        await server.manager.enter_room(sid, NAMESPACE, conversation_room("shared"))
    other = await server.manager.connect("eio-3", NAMESPACE)
    await server.manager.enter_room(other, NAMESPACE, conversation_room("elsewhere"))
    await rooms.deliver(token("shared"))
    assert sorted(eio_sid for eio_sid, _, _ in server.emitted) == ["eio-1", "eio-2"]
    assert {name for _, name, _ in server.emitted} == {"chat:chunk"}
