"""What an upstream answered stays in the server log; the tenant sees a status and a summary.

An upstream's error body can be anything: an internal service's diagnostics, a URL with
credentials in its query. Chat errors carry the status code and a generic message; the body
goes to the log, truncated.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TypeVar

import httpx

from chat_shell.net._redact import redact
from chat_shell.net._transport import content_encoding

__all__ = [
    "error_body_logger",
    "find_cause",
    "log_upstream_error",
    "redact",
    "truncated",
]

E = TypeVar("E", bound=BaseException)

LOGGED_BODY_CHARS = 500
# An error body is read for the log only when it says it is at most this long: a hostile
# server must not make the service hold a large body in memory.
READ_BODY_BYTES = 64 * 1024

logger = logging.getLogger(__name__)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, the members of exception groups and every cause and context, each once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(reversed(current.exceptions))
        stack.extend(e for e in (current.__context__, current.__cause__) if e is not None)


def find_cause(exc: BaseException, kind: type[E]) -> E | None:
    """The first `kind` in `exc`'s groups and causes, or None."""
    return next((e for e in _chain(exc) if isinstance(e, kind)), None)


def truncated(text: str, limit: int = LOGGED_BODY_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


def log_upstream_error(
    what: str, status: int | None, body: object, secrets: Iterable[str] = ()
) -> None:
    """Log what an upstream answered (truncated, known secret values masked: a server may
    echo the credentials it was sent), for the operator's eyes only."""
    logger.warning("%s answered HTTP %s: %s", what, status, truncated(redact(str(body), secrets)))


def error_body_logger(
    what: str, secrets: Iterable[str] = ()
) -> Callable[[httpx.Response], Awaitable[None]]:
    """An httpx `response` event hook that logs the body of an error answer (status >= 400).

    The body is read only when its Content-Length is known and small (`READ_BODY_BYTES`);
    reading is what httpx does anyway for a response that is not streamed.
    """

    async def log_error_body(response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        length = response.headers.get("content-length", "")
        if content_encoding(response.headers):  # its length says nothing of what it inflates to
            body: object = "(body not read, it is encoded)"
        elif length.isdigit() and int(length) <= READ_BODY_BYTES:
            await response.aread()
            body = response.text
        else:
            body = f"(body not read, content-length {length or 'unknown'})"
        log_upstream_error(what, response.status_code, body, secrets)

    return log_error_body
