"""Logging set-up shared by every process (handed to uvicorn so each worker applies it)."""

from __future__ import annotations

from typing import Any


def logging_dict(level: str) -> dict[str, Any]:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        },
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": "plain"},
        },
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            # Our access log replaces uvicorn's (which would log query strings).
            "uvicorn.access": {"level": "WARNING"},
            "httpx": {"level": "WARNING"},
        },
    }


def configure_logging(level: str) -> None:
    import logging.config

    logging.config.dictConfig(logging_dict(level))
