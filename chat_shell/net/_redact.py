"""Secret values masked in what the service logs about outbound connections.

The code that substitutes secrets (an MCP server's config) knows their values; the egress
policy, which logs what it refused, does not. `log_secrets` hands the values down through a
context variable, so every task the connection starts inherits them.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar

_LOG_SECRETS: ContextVar[frozenset[str]] = ContextVar("egress_log_secrets", default=frozenset())


def redact(text: str, secrets: Iterable[str]) -> str:
    """Mask secret values (e.g. in a URL echoed by a connection error)."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def log_secrets(secrets: Iterable[str]) -> None:
    """Mask `secrets` in the egress log lines of the current task and the tasks it starts."""
    _LOG_SECRETS.set(frozenset(secrets))


def redacted_for_log(text: str) -> str:
    return redact(text, _LOG_SECRETS.get())
