"""Opaque `continue` tokens for keyset pagination.

A token comes back from the client, so it is input like any other: whatever it holds, decoding
either yields values a query can take on both databases (ids within INTEGER, strings without
NUL, bounded lengths) or raises 422 `invalid_cursor`; never a 500 from the driver.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from typing import Any

from backend.errors import InvalidRequest

MAX_TOKEN_CHARS = 2048  # ours are < 400; bounds decoding work
MAX_ID = 2**31 - 1  # id columns are INTEGER: 32 bits on PostgreSQL
MAX_KEY_CHARS = 1024
_DIGITS = re.compile(r"[0-9]{1,10}")  # ASCII only: str.isdigit() also accepts '²'


def _encode(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(token: str) -> list[Any]:
    if len(token) > MAX_TOKEN_CHARS:
        raise _invalid()
    try:
        padded = token + "=" * (-len(token) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError, RecursionError, binascii.Error):
        raise _invalid() from None
    if not isinstance(values, list) or len(values) != 2:
        raise _invalid()
    return values


def _invalid() -> InvalidRequest:
    return InvalidRequest("the continue token is not valid", code="invalid_cursor")


def _key(value: Any) -> str:
    """A string a query may compare with: bounded, no NUL (PostgreSQL text refuses it)."""
    if not isinstance(value, str) or len(value) > MAX_KEY_CHARS or "\x00" in value:
        raise _invalid()
    return value


def _row_id(value: Any) -> int:
    # bool is an int in Python; JSON `true` is not an id.
    if type(value) is not int or not 0 <= value <= MAX_ID:
        raise _invalid()
    return value


def encode(name: str, row_id: int) -> str:
    return _encode([name, row_id])


def decode(token: str) -> tuple[str, int]:
    name, row_id = _decode(token)
    return _key(name), _row_id(row_id)


def encode_pair(moment: datetime, key: str) -> str:
    return _encode([moment.isoformat(), key])


def decode_pair(token: str) -> tuple[datetime, str]:
    moment, key = _decode(token)
    try:
        parsed = datetime.fromisoformat(_key(moment))
        if parsed.tzinfo is None:
            raise ValueError("naive")
        parsed = parsed.astimezone(UTC)  # SQLite compares the UTC text; year 1 may overflow
    except (ValueError, OverflowError):
        raise _invalid() from None
    return parsed, _key(key)


def encode_id(row_id: int) -> str:
    """A bare id (message pages): the decimal digits, as clients have always seen them."""
    return str(row_id)


def decode_id(token: str) -> int:
    if not _DIGITS.fullmatch(token):
        raise _invalid()
    return _row_id(int(token))
