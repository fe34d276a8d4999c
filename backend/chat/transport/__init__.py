"""The turn's way between the edges and whoever runs it: `TurnTransport` and its envelopes."""

from backend.chat.transport.base import StoreUserMessage, TurnTransport, turn_in_progress
from backend.chat.transport.envelope import (
    BrowserEvent,
    Envelope,
    StoredMessage,
    TurnEnded,
    TurnEnvelope,
    TurnEvent,
    message_json,
)
from backend.chat.transport.local import LocalTransport
from backend.chat.transport.redis import RedisKeys, RedisTransport

__all__ = [
    "BrowserEvent",
    "Envelope",
    "LocalTransport",
    "RedisKeys",
    "RedisTransport",
    "StoreUserMessage",
    "StoredMessage",
    "TurnEnded",
    "TurnEnvelope",
    "TurnEvent",
    "TurnTransport",
    "message_json",
    "turn_in_progress",
]
