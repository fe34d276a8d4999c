"""API token material: random secrets shown once, stored only as SHA-256."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "shk_"
TOKEN_BYTES = 32  # >= 32 random bytes (issue 2)
MIN_BOOTSTRAP_TOKEN_LENGTH = 32


def generate_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
