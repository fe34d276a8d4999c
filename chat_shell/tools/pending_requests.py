"""The PendingRequestRegistry: skill tools ask the user's browser and wait for the answer.

The implementation lives in `chat_shell/tools/pending/`; this module is its import path.
"""

from __future__ import annotations

from chat_shell.tools.pending.base import (
    REQUEST_EVENT,
    Outcome,
    PendingRequestRegistry,
    RegistryMetrics,
)
from chat_shell.tools.pending.errors import (
    FrontendError,
    PendingRequestError,
    RegistryUnavailable,
    RequestTimeout,
)
from chat_shell.tools.pending.memory import InMemoryPendingRequestRegistry
from chat_shell.tools.pending.redis_registry import InvalidAnswer, RedisPendingRequestRegistry

__all__ = [
    "REQUEST_EVENT",
    "FrontendError",
    "InMemoryPendingRequestRegistry",
    "InvalidAnswer",
    "Outcome",
    "PendingRequestError",
    "PendingRequestRegistry",
    "RedisPendingRequestRegistry",
    "RegistryMetrics",
    "RegistryUnavailable",
    "RequestTimeout",
]
