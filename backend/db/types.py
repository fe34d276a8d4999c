"""Column types that behave the same on PostgreSQL and SQLite."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import AfterValidator
from sqlalchemy import JSON, DateTime, Dialect
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes; SQLite hands back naive values, which are UTC by rule."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime: always store timezone-aware UTC values")
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


# Plain JSON on both backends. On PostgreSQL `json` keeps the text as written, so reads hand it
# out without re-serializing (JSONB would rebuild the text on every read: 2x slower listing).
JSONType: Any = JSON()


def utcnow() -> datetime:
    return datetime.now(UTC)


def no_nul(text: str) -> str:
    """`text`, unless it holds a NUL character: PostgreSQL text cannot (the driver fails), so
    text bound for the database takes none on SQLite either."""
    if "\x00" in text:
        raise ValueError("must not contain NUL characters (U+0000)")
    return text


# pydantic metadata for a `str` that will be stored or looked up in the database.
NoNul = AfterValidator(no_nul)
