"""A migrated database with a session factory and users, for the search tests (both backends)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from tests.support.skill_store import Store


@pytest.fixture
async def store(database_url: str, tmp_path: Path) -> AsyncIterator[Store]:
    engine = create_engine(database_url)
    try:
        yield Store(create_sessionmaker(engine), Settings(database_url=database_url))
    finally:
        await engine.dispose()
