"""Why a fetch was refused or failed: one stable code each (API status in parentheses)."""

from __future__ import annotations

from typing import Any

from backend.errors import PayloadTooLarge, SkillhiveError


class FetchError(SkillhiveError):
    """The source could not be fetched (422 unless a subclass says otherwise)."""

    status_code = 422
    code = "fetch_failed"


class FetchFailed(FetchError):
    """The remote answered with an error, or could not be reached (502)."""

    status_code = 502
    code = "fetch_failed"


class FetchTimeout(FetchError):
    status_code = 504
    code = "fetch_timeout"


class FetchTooLarge(FetchError):
    status_code = PayloadTooLarge.status_code


def too_large(code: str, what: str, limit: int) -> FetchTooLarge:
    return FetchTooLarge(f"{what} is over {limit}", code=code, details={"limit": limit})


def refused(code: str, message: str, **details: Any) -> FetchError:
    return FetchError(message, code=code, details=details)
