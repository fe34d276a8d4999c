"""Token estimation without a tokenizer: budgets and the local models' usage figures."""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about four characters per token)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
