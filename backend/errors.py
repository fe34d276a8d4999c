"""The root exception of the backend and its stable error codes (docs/architecture.md).

Every error a client can see is a `SkillhiveError` (or a subclass) carrying a stable,
machine-readable `code`, the HTTP status it maps to and optional `details`. The API turns
them into `{"error": {"code", "message", "details"}}` in one place (`backend/api/errors.py`).
"""

from __future__ import annotations

from typing import Any


class SkillhiveError(Exception):
    """Base of every client-visible backend error."""

    status_code: int = 400
    code: str = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status_code: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status_code is not None:
            self.status_code = status_code
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidRequest(SkillhiveError):
    status_code = 422
    code = "invalid_request"


class Unauthorized(SkillhiveError):
    status_code = 401
    code = "unauthorized"


class Forbidden(SkillhiveError):
    status_code = 403
    code = "forbidden"


class NotFound(SkillhiveError):
    status_code = 404
    code = "not_found"


class Conflict(SkillhiveError):
    status_code = 409
    code = "conflict"


class PreconditionFailed(SkillhiveError):
    status_code = 412
    code = "precondition_failed"


class PayloadTooLarge(SkillhiveError):
    status_code = 413
    code = "payload_too_large"


class ServiceUnavailable(SkillhiveError):
    status_code = 503
    code = "unavailable"
