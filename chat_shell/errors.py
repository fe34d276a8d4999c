"""The root exception of chat_shell (docs/architecture.md).

Every error chat_shell raises towards its caller is a `ChatShellError` carrying a stable,
machine-readable `code` and optional `details`; backend maps it to its API error shape in one
place. chat_shell imports nothing from backend, so this is its own root, shaped like
`backend.errors.SkillhiveError` minus the HTTP status.
"""

from __future__ import annotations

from typing import Any


class ChatShellError(Exception):
    """Base of every error chat_shell reports to its caller."""

    code: str = "chat_shell_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidTurnRequest(ChatShellError):
    """The turn request is inconsistent (e.g. two skills with one name)."""

    code = "invalid_turn_request"


class ProviderError(ChatShellError):
    """Base of the errors about a skill's tool provider; reported, the turn goes on without it."""

    code = "provider_error"


class ProviderNotAllowed(ProviderError):
    """The skill is not public, so its package code must never be imported."""

    code = "provider_not_allowed"


class ProviderLoadError(ProviderError):
    """The provider could not be loaded: missing package, bad hash, import failure, bad class."""

    code = "provider_load_failed"


class ModelCallError(ChatShellError):
    """The chat model failed (network, API error, bad response)."""

    code = "model_error"


class RecursionLimitReached(ChatShellError):
    """The agent used up its step budget for the turn without a final answer."""

    code = "recursion_limit"


class TurnCancelled(ChatShellError):
    """The task running the turn was cancelled."""

    code = "cancelled"
