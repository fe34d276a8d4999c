"""What travels from a turn to the edges: typed envelopes, one JSON shape on every transport.

A turn publishes `TurnEvent`s (chat_shell's progress events) and ends with one `TurnEnded`
carrying the stored answer once; a skill tool's request to the browser is a `BrowserEvent`.
Every envelope names the conversation and the turn's `message_id` (the user message the turn
answers). Only the edges turn them into SSE frames (`backend/api/sse.py`) or Socket.IO events
(`backend/ws/rooms.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from backend.chat.skill_versions import SkillChangedEvent
from backend.db.models import Message
from chat_shell import (
    ArtifactEvent,
    McpCallEvent,
    McpErrorEvent,
    SkillErrorEvent,
    SkillLoadedEvent,
    StartEvent,
    TokenEvent,
    ToolEndEvent,
    ToolStartEvent,
    UsageEvent,
)
from chat_shell import ErrorEvent as TurnError


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StoredMessage(_Frozen):
    """A stored message as every API shows it (REST's `MessageOut`)."""

    id: int
    conversation_id: str
    role: Literal["user", "assistant"]
    content: str
    status: str
    reply_to: int | None
    tool_calls: list[dict[str, Any]]
    loaded_skills: list[dict[str, Any]] | None
    usage: dict[str, Any]
    error: dict[str, Any] | None
    created_at: str

    @classmethod
    def of(cls, message: Message) -> StoredMessage:
        return cls(
            id=message.id,
            conversation_id=message.conversation_id,
            role=message.role,
            content=message.content,
            status=message.status,
            reply_to=message.reply_to,
            tool_calls=message.tool_calls or [],
            loaded_skills=message.loaded_skills,
            usage=message.usage or {},
            error=message.error,
            created_at=message.created_at.isoformat(),
        )


def message_json(message: Message) -> dict[str, Any]:
    return StoredMessage.of(message).model_dump(mode="json")


ProgressEvent = Annotated[
    StartEvent
    | TokenEvent
    | ToolStartEvent
    | ToolEndEvent
    | SkillLoadedEvent
    | SkillErrorEvent
    | McpErrorEvent
    | ArtifactEvent
    | McpCallEvent
    | UsageEvent
    | SkillChangedEvent,  # the host's own: a loaded skill is another version this turn
    Field(discriminator="type"),
]


class TurnEvent(_Frozen):
    """One event of a running turn."""

    kind: Literal["event"] = "event"
    conversation_id: str
    message_id: int
    event: ProgressEvent


class TurnEnded(_Frozen):
    """The turn's last envelope: `done` when `error` is None, else `error`. `reply` is the stored
    answer (None only when it could not be stored)."""

    kind: Literal["end"] = "end"
    conversation_id: str
    message_id: int
    error: TurnError | None = None
    reply: StoredMessage | None = None


class BrowserEvent(_Frozen):
    """An event for the browsers showing the conversation (e.g. `skill:request`)."""

    kind: Literal["browser"] = "browser"
    conversation_id: str
    name: str
    data: dict[str, Any]


Envelope = Annotated[TurnEvent | TurnEnded | BrowserEvent, Field(discriminator="kind")]
TurnEnvelope = TurnEvent | TurnEnded  # what an SSE reader of one conversation receives
_ENVELOPE: TypeAdapter[TurnEvent | TurnEnded | BrowserEvent] = TypeAdapter(Envelope)


def dumps(envelope: TurnEvent | TurnEnded | BrowserEvent) -> bytes:
    return envelope.model_dump_json().encode()


def loads(data: bytes | str) -> TurnEvent | TurnEnded | BrowserEvent:
    return _ENVELOPE.validate_json(data)
