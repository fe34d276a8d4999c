"""Fixtures of the database tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from backend.db.engine import create_engine


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on the test's database (SQLite and PostgreSQL), disposed after the test."""
    found = create_engine(database_url)
    try:
        yield found
    finally:
        await found.dispose()
