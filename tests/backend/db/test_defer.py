"""`defer`: a statement nobody reads the answer of, sent with the transaction's next statement
(in that statement's trip on SQLite, at once elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from backend.db.engine import create_engine
from backend.db.hot_writes import HotWrite
from backend.db.models import User
from backend.db.sqlite_driver import defer

_ADD = HotWrite(insert(User).values(name=bindparam("name")).returning(User.id))
_ADD_QUIETLY = insert(User).values(name=bindparam("name"))
_RENAME = update(User).where(User.name == bindparam("old")).values(name=bindparam("new"))


async def _names(url: str) -> set[str]:
    """The users as another connection sees them: what was committed."""
    engine = create_engine(url)
    try:
        async with engine.connect() as other:
            found = await other.scalars(select(User.name).where(User.name != "system"))
            return set(found.all())
    finally:
        await engine.dispose()


async def _count_trips(conn: AsyncConnection, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions sent to aiosqlite's thread from now on, by name."""
    driver = (await conn.get_raw_connection()).driver_connection
    sent: list[str] = []
    real: Callable[..., Any] = driver._execute

    async def counted(function: Callable[..., Any], *args: Any) -> Any:
        sent.append(function.__name__)
        return await real(function, *args)

    monkeypatch.setattr(driver, "_execute", counted)
    return sent


async def test_deferred_statements_run_before_the_next_one_in_the_same_transaction(
    engine: AsyncEngine,
    database_url: str,
) -> None:
    async with engine.connect() as conn:
        await defer(conn, _ADD_QUIETLY, {"name": "first"})
        await defer(conn, _RENAME, {"old": "first", "new": "renamed"})  # sees `first`
        rows = await _ADD.rows(conn, {"name": "second"}, commit=True)
        assert rows and not conn.in_transaction()
    assert await _names(database_url) == {"renamed", "second"}


@pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)
async def test_on_sqlite_the_deferred_statements_go_with_the_next_statement_or_commit(
    engine: AsyncEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with engine.connect() as conn:
        await conn.execute(select(1))  # the connection is open before counting
        sent = await _count_trips(conn, monkeypatch)
        await defer(conn, _ADD_QUIETLY, {"name": "a"})
        await defer(conn, _ADD_QUIETLY, {"name": "b"})
        assert sent == []  # held back
        await _ADD.rows(conn, {"name": "c"}, commit=True)
        assert sent == []  # with its COMMIT, on this thread (sqlite_driver: `here`)
        await defer(conn, _ADD_QUIETLY, {"name": "d"})
        await conn.commit()  # only deferred statements: they go with the COMMIT
        assert sent == ["_deferred_and_commit"]
    assert await _names(database_url) == {"a", "b", "c", "d"}


async def test_a_rollback_drops_what_was_deferred(engine: AsyncEngine, database_url: str) -> None:
    async with engine.connect() as conn:
        await defer(conn, _ADD_QUIETLY, {"name": "dropped"})
        await conn.rollback()
        await _ADD.rows(conn, {"name": "kept"}, commit=True)
    assert await _names(database_url) == {"kept"}


async def test_a_connection_returned_with_deferred_statements_does_not_pass_them_on(
    database_url: str,
) -> None:
    engine = create_engine(database_url, pool_size=1, overflow=0)  # the next checkout: the same
    try:
        async with engine.connect() as conn:
            await defer(conn, _ADD_QUIETLY, {"name": "abandoned"})
        async with engine.connect() as conn:
            await _ADD.rows(conn, {"name": "next"}, commit=True)
        assert await _names(database_url) == {"next"}
    finally:
        await engine.dispose()


async def test_a_deferred_statement_that_fails_fails_the_next_one_and_commits_nothing(
    engine: AsyncEngine,
    database_url: str,
) -> None:
    async with engine.connect() as conn:
        await _ADD.rows(conn, {"name": "taken"}, commit=True)
        # Names are unique. Raised at once where nothing is held back (PostgreSQL), by the
        # next statement on SQLite.
        with pytest.raises(IntegrityError):
            await defer(conn, _ADD_QUIETLY, {"name": "taken"})
            await _ADD.rows(conn, {"name": "after"}, commit=True)
        await conn.rollback()
    assert await _names(database_url) == {"taken"}
