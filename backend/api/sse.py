"""The SSE edge of turns: envelopes -> `event: <type>` frames (`data:` is the event as JSON)."""

from __future__ import annotations

import json
from typing import Any

from backend.chat.transport.envelope import TurnEnded, TurnEnvelope
from backend.errors import Unauthorized
from chat_shell import ErrorEvent


def sse_data(envelope: TurnEnvelope) -> dict[str, Any]:
    """The event as SSE readers get it: chat_shell's event, or for the end `done {message}` /
    `error {code, message, reply}` with the stored answer once; tagged with `conversation_id`
    and `message_id` (the user message the turn answers)."""
    tags = {"conversation_id": envelope.conversation_id, "message_id": envelope.message_id}
    if not isinstance(envelope, TurnEnded):
        return {**envelope.event.model_dump(mode="json"), **tags}
    reply = envelope.reply.model_dump(mode="json") if envelope.reply is not None else None
    if envelope.error is None:
        return {"type": "done", "message": reply, **tags}
    return {"type": "error", **envelope.error.model_dump(mode="json"), "reply": reply, **tags}


def sse_frame(envelope: TurnEnvelope) -> bytes:
    data = sse_data(envelope)
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def sse_refused(conversation_id: str, message_id: int, refused: Unauthorized) -> bytes:
    """The last frame of a stream whose caller lost access (`LiveAuth.stream`): `error` with
    REST's 401 code (`token_revoked`, `token_expired`, `user_inactive`), and no answer."""
    error = ErrorEvent(code=refused.code, message=refused.message)
    return sse_frame(TurnEnded(conversation_id=conversation_id, message_id=message_id, error=error))
