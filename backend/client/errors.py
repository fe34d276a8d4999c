"""Exit codes scripts can rely on, and the one-line error every expected failure becomes."""

from __future__ import annotations

from enum import IntEnum

import httpx


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # the API refused (validation, conflict, a failed turn) or a local file is bad
    USAGE = 2  # bad command line (click's own code)
    NOT_FOUND = 3  # the API answered 404
    AUTH = 4  # no token, or the API answered 401/403
    CONNECTION = 5  # the API could not be reached


class CliError(Exception):
    """An expected failure: printed as `error: <message>`, exit with `exit_code`."""

    def __init__(self, message: str, exit_code: ExitCode = ExitCode.ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ApiError(CliError):
    """An error answer of the API: `STATUS code: message`, the exit code by status."""

    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.code = ""
        self.details: dict[str, object] = {}
        try:
            error = response.json()["error"]
            self.code = str(error["code"])
            self.details = dict(error.get("details") or {})
            detail = f"{self.code}: {error['message']}"
        except (ValueError, KeyError, TypeError):
            detail = f"{response.reason_phrase} from {response.request.url}"
        hint = ""
        if self.status == 401:
            hint = " (check the token: `skillhive login` or SKILLHIVE_TOKEN)"
        super().__init__(f"{self.status} {detail}{hint}", exit_code_for(self.status))


def exit_code_for(status: int) -> ExitCode:
    if status == 404:
        return ExitCode.NOT_FOUND
    if status in (401, 403):
        return ExitCode.AUTH
    return ExitCode.ERROR


def unreachable(url: str, exc: httpx.TransportError) -> CliError:
    reason = str(exc) or type(exc).__name__
    return CliError(
        f"cannot reach the Skillhive API at {url} ({reason}); is `skillhive serve` running? "
        "Set SKILLHIVE_URL or run `skillhive login` (default http://127.0.0.1:$SKILLHIVE_PORT)",
        ExitCode.CONNECTION,
    )
