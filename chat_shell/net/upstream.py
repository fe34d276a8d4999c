"""What an upstream answered stays in the server log; the tenant sees a status and a summary.

An upstream's error body can be anything: an internal service's diagnostics, a URL with
credentials in its query. Chat errors carry the status code and a generic message; the body
goes to the log, truncated.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TypeVar

E = TypeVar("E", bound=BaseException)

LOGGED_BODY_CHARS = 500

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


def log_upstream_error(what: str, status: int | None, body: object) -> None:
    """Log what an upstream answered (truncated), for the operator's eyes only."""
    logger.warning("%s answered HTTP %s: %s", what, status, truncated(str(body)))
