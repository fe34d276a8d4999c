"""The SQLite engine: WAL, foreign keys, and writes that wait for the write lock instead of
failing at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import aiosqlite
import pytest
from sqlalchemy import column, insert, table, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from backend.db.engine import create_engine, create_sessionmaker
from backend.db.hot_writes import HotWrite


async def test_pragmas_follow_the_settings(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/a.db", busy_timeout=1.5)
    try:
        async with engine.connect() as conn:
            pragmas = [
                (await conn.exec_driver_sql(f"PRAGMA {name}")).scalar()
                for name in ("journal_mode", "foreign_keys", "busy_timeout")
            ]
    finally:
        await engine.dispose()
    assert pragmas == ["wal", 1, 1500]


async def test_a_write_waits_for_the_write_lock_held_by_another_connection(
    tmp_path: Path,
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/b.db", busy_timeout=30)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")
        holder = await engine.connect()
        await holder.execute(text("INSERT INTO t VALUES (1)"))  # holds the write lock
        async with engine.connect() as other:
            # Reads go on beside the writer (WAL) and see the last commit.
            assert (await other.execute(text("SELECT count(*) FROM t"))).scalar() == 0
            waiting = asyncio.create_task(other.execute(text("INSERT INTO t VALUES (2)")))
            await asyncio.sleep(0.3)
            assert not waiting.done()  # waiting for the lock, not failed
            await holder.commit()
            await waiting
            await other.commit()
            assert (await other.execute(text("SELECT count(*) FROM t"))).scalar() == 2
        await holder.close()
    finally:
        await engine.dispose()


async def test_a_connection_returned_inside_a_transaction_is_rolled_back(tmp_path: Path) -> None:
    # The pool skips its ROLLBACK on return when no transaction is open (backend/db/engine.py);
    # one opened behind SQLAlchemy's back must still end, or it would keep the write lock.
    engine = create_engine(f"sqlite:///{tmp_path}/c.db", busy_timeout=0.2)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            await raw.driver_connection.execute("INSERT INTO t VALUES (1)")
            assert raw.driver_connection.in_transaction
        async with engine.connect() as first, engine.connect() as second:
            for conn in (first, second):  # whichever the pool hands back, no lock is held
                await conn.execute(text("INSERT INTO t VALUES (2)"))
                await conn.commit()
            assert (await first.execute(text("SELECT n FROM t ORDER BY n"))).scalars().all() == [
                2,
                2,
            ]
    finally:
        await engine.dispose()


async def _handoffs(engine: AsyncEngine, work: Callable[[], Awaitable[object]]) -> int:
    """How many calls `work` queued on aiosqlite's thread (each a round trip)."""
    counted = 0
    original = aiosqlite.Connection._execute

    async def counting(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal counted
        counted += 1
        return await original(self, fn, *args, **kwargs)

    with patch.object(aiosqlite.Connection, "_execute", counting):
        await work()
    return counted


async def test_a_statement_is_one_trip_to_the_sqlite_thread(tmp_path: Path) -> None:
    # backend/db/sqlite_driver.py: SQLAlchemy's adapter made four (cursor, execute, fetch,
    # close) and a ROLLBACK per read-only session.
    engine = create_engine(f"sqlite:///{tmp_path}/d.db")
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")
        sessions = create_sessionmaker(engine)

        async def read() -> None:
            async with sessions() as session:
                assert (await session.execute(text("SELECT count(*) FROM t"))).scalar() == 0

        async def write() -> None:
            async with sessions() as session:
                await session.execute(text("INSERT INTO t VALUES (1)"))
                await session.commit()

        await read()  # the pool's first connection (and its PRAGMAs) before counting
        assert await _handoffs(engine, read) == 1  # the SELECT; no ROLLBACK
        assert await _handoffs(engine, write) == 2  # the INSERT and the COMMIT

        async def last_write() -> None:
            async with engine.connect() as conn:
                await HotWrite(insert(table("t", column("n")))).rows(conn, {"n": 2}, commit=True)

        assert await _handoffs(engine, last_write) == 1  # the INSERT with its COMMIT
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 2
    finally:
        await engine.dispose()


async def test_the_lean_cursor_reports_what_sqlite3_does(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/e.db")
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER UNIQUE)")
            inserted = await conn.execute(text("INSERT INTO t (n) VALUES (10)"))
            assert inserted.lastrowid == 1
            await conn.execute(text("INSERT INTO t (n) VALUES (:n)"), [{"n": 20}, {"n": 30}])
            updated = await conn.execute(text("UPDATE t SET n = n + 1 WHERE n > 15"))
            assert updated.rowcount == 2
            result = await conn.execute(text("SELECT n FROM t ORDER BY n"))
            assert result.fetchmany(2) == [(10,), (21,)]
            assert result.fetchall() == [(31,)]
            streamed = await conn.stream(text("SELECT n FROM t ORDER BY n"))
            assert [n async for n in streamed.scalars()] == [10, 21, 31]
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(text("INSERT INTO t (n) VALUES (10)"))
        async with engine.connect() as conn:  # a rollback inside a transaction still happens
            await conn.execute(text("INSERT INTO t (n) VALUES (40)"))
            await conn.rollback()
            assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 3
    finally:
        await engine.dispose()
