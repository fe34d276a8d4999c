"""Opaque `continue` tokens for keyset pagination."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

from backend.errors import InvalidRequest


def _encode(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(token: str) -> list[Any]:
    try:
        padded = token + "=" * (-len(token) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(values, list) or len(values) != 2:
            raise ValueError("not a pair")
    except (ValueError, TypeError) as exc:
        raise _invalid() from exc
    return values


def _invalid() -> InvalidRequest:
    return InvalidRequest("the continue token is not valid", code="invalid_continue")


def encode(name: str, row_id: int) -> str:
    return _encode([name, row_id])


def decode(token: str) -> tuple[str, int]:
    name, row_id = _decode(token)
    if not isinstance(name, str) or not isinstance(row_id, int):
        raise _invalid()
    return name, row_id


def encode_pair(moment: datetime, key: str) -> str:
    return _encode([moment.isoformat(), key])


def decode_pair(token: str) -> tuple[datetime, str]:
    moment, key = _decode(token)
    try:
        parsed = datetime.fromisoformat(moment)
    except (TypeError, ValueError) as exc:
        raise _invalid() from exc
    if not isinstance(key, str) or parsed.tzinfo is None:
        raise _invalid()
    return parsed, key
