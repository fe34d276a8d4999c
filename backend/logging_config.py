"""Logging set-up shared by every process (handed to uvicorn so each worker applies it).

`SKILLHIVE_LOG_LEVEL` sets Skillhive's own loggers. Every other logger stays at WARNING or
quieter: libraries log URLs with their query (MCP clients, uvicorn's WebSocket lines), request
and response bodies (openai, httpcore), SQL parameters (sqlalchemy.engine) or message content
at DEBUG and INFO, and secrets must never reach a log. An operator who needs one
of them names it in `SKILLHIVE_LOG_LEVELS`, knowing what it prints.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

OWN_LOGGERS = ("skillhive", "backend", "chat_shell")
THIRD_PARTY_LEVEL = "WARNING"

# Known to print secrets or content below WARNING. The root level already keeps them quiet; they
# are also set explicitly, so a library that lowers its own logger's level cannot undo it.
NOISY_LOGGERS = (
    "aiosqlite",
    "anyio",
    "asyncio",
    "engineio",
    "httpcore",
    "httpx",
    "langchain",
    "langchain_core",
    "langchain_mcp_adapters",
    "langchain_openai",
    "langgraph",
    "mcp",
    "openai",
    "psycopg",
    "redis",
    "socketio",
    "sqlalchemy",
    "urllib3",
    "uvicorn",
    "uvicorn.access",  # our access log replaces it (it would log query strings)
    "uvicorn.error",
    "websockets",
)


# C0 and C1 controls and the Unicode line and paragraph separators: in a message they could
# forge a line of their own (a request path holding "%0A...") or hide the rest of it (NUL).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    r"""`text` with each control character written as its escape (`\n`, `\x00`, `\u2028`)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class OneLineFormatter(logging.Formatter):
    """Each message is one line whatever its arguments hold; a traceback still follows it."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = escape_controls(record.message)
        return super().formatMessage(record)


def _quieter(level: str, floor: str) -> str:
    return level if logging.getLevelName(level) >= logging.getLevelName(floor) else floor


def logging_dict(level: str, overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`level` for our loggers, WARNING (or `level` if quieter) for the rest, then `overrides`
    (logger name -> level) exactly as the operator gave them."""
    third_party = {"level": _quieter(level, THIRD_PARTY_LEVEL)}
    loggers: dict[str, dict[str, Any]] = {name: dict(third_party) for name in NOISY_LOGGERS}
    loggers.update({name: {"level": level} for name in OWN_LOGGERS})
    loggers.update({name: {"level": value} for name, value in (overrides or {}).items()})
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {
                "()": OneLineFormatter,
                "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            },
        },
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": "plain"},
        },
        "root": {"handlers": ["stderr"], **third_party},
        "loggers": loggers,
    }


def configure_logging(level: str, overrides: Mapping[str, str] | None = None) -> None:
    import logging.config

    logging.config.dictConfig(logging_dict(level, overrides))
