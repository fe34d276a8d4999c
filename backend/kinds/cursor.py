"""Opaque `continue` tokens for keyset pagination over (name, id)."""

from __future__ import annotations

import base64
import json

from backend.errors import InvalidRequest


def encode(name: str, row_id: int) -> str:
    raw = json.dumps([name, row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str) -> tuple[str, int]:
    try:
        padded = token + "=" * (-len(token) % 4)
        name, row_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(name, str) or not isinstance(row_id, int):
            raise ValueError("wrong types")
    except (ValueError, TypeError) as exc:
        raise InvalidRequest("the continue token is not valid", code="invalid_continue") from exc
    return name, row_id
