"""The SQLite engine: WAL, foreign keys, writes that wait for the write lock instead of failing
at once, and prebuilt reads on the event loop's thread that never wait there."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import aiosqlite
import pytest
from sqlalchemy import column, func, insert, select, table, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from backend.db import sqlite_driver
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.hot_reads import HotRead
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

        assert await _handoffs(engine, last_write) == 0  # with its COMMIT, on this thread
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


async def _thread_ids(engine: AsyncEngine) -> None:
    """Teach `engine`'s connection (its pool's only one) SQL `thread_id()`: the thread running
    the statement."""
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        await raw.driver_connection.create_function("thread_id", 0, threading.get_ident)


async def test_a_hot_read_runs_on_the_event_loops_thread_and_never_waits_there(
    tmp_path: Path,
) -> None:
    # backend/db/sqlite_driver.py: a trip to aiosqlite's thread cost more than these reads.
    engine = create_engine(f"sqlite:///{tmp_path}/f.db", busy_timeout=2, pool_size=1, overflow=0)
    try:
        await _thread_ids(engine)
        read = HotRead(select(func.thread_id().label("thread")))
        async with engine.connect() as conn:
            rows: list[Any] = []

            async def hot() -> None:
                rows.extend(await read.rows(conn, {}))

            assert await _handoffs(engine, hot) == 0
            assert rows[0].thread == threading.get_ident()
            elsewhere = (await conn.exec_driver_sql("SELECT thread_id()")).scalar()
            assert elsewhere != threading.get_ident()  # other statements: aiosqlite's thread
            # Run with no busy timeout, and the configured one back for what follows.
            assert (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar() == 2000
    finally:
        await engine.dispose()


async def test_a_hot_read_that_meets_a_lock_waits_for_it_on_the_sqlite_thread(
    tmp_path: Path,
) -> None:
    # In WAL mode a reader meets a lock only in rare moments (a recovery, a connection in
    # exclusive locking mode), which no test can stage on demand: sqlite3 answers here as it
    # would then, on the event loop's thread only.
    engine = create_engine(f"sqlite:///{tmp_path}/g.db", busy_timeout=2, pool_size=1, overflow=0)
    loop_thread = threading.get_ident()
    ran_on: list[int] = []
    original = sqlite_driver._run

    def locked_here(connection: sqlite3.Connection, operation: str, parameters: Any) -> Any:
        ran_on.append(threading.get_ident())
        if threading.get_ident() == loop_thread:
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = sqlite3.SQLITE_BUSY
            raise error
        return original(connection, operation, parameters)

    try:
        await _thread_ids(engine)
        read = HotRead(select(func.thread_id().label("thread")))
        async with engine.connect() as conn:
            with patch.object(sqlite_driver, "_run", locked_here):
                (row,) = await read.rows(conn, {})
            assert ran_on == [loop_thread, row.thread] and row.thread != loop_thread
            assert (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar() == 2000
    finally:
        await engine.dispose()


async def test_no_statement_runs_here_while_the_sqlite_thread_runs_a_call_of_its_connection(
    tmp_path: Path,
) -> None:
    # Not even one whose caller gave up (cancelled): the two threads would share the
    # connection, and the statement here would set the PRAGMAs under the thread's call.
    engine = create_engine(f"sqlite:///{tmp_path}/k.db", pool_size=1, overflow=0)
    released = threading.Event()
    try:
        await _thread_ids(engine)
        read = HotRead(select(func.thread_id().label("thread")))
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver = raw.driver_connection
            assert driver is not None
            busy = asyncio.create_task(driver._execute(released.wait, 5))
            await asyncio.sleep(0.05)  # the thread is in the call
            busy.cancel()
            with pytest.raises(asyncio.CancelledError):
                await busy
            reading = asyncio.create_task(read.rows(conn, {}))
            await asyncio.sleep(0.05)
            assert not reading.done()  # queued behind the call, not run on this thread
            released.set()
            (row,) = await reading
            assert row.thread != threading.get_ident()
            (row,) = await read.rows(conn, {})  # the thread is idle again: here
            assert row.thread == threading.get_ident()
    finally:
        released.set()
        await engine.dispose()


async def test_a_hot_write_that_meets_the_write_lock_waits_for_it_off_the_event_loop(
    tmp_path: Path,
) -> None:
    # It runs on the event loop's thread only while no other connection holds the write lock;
    # waiting there would stall every request, and the holder below (a task on this loop)
    # could never commit: the write would fail after its busy timeout instead.
    engine = create_engine(f"sqlite:///{tmp_path}/h.db", busy_timeout=5)
    write = HotWrite(insert(table("t", column("n"))))
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")
        async with engine.connect() as holder, engine.connect() as writer:
            await holder.execute(text("INSERT INTO t VALUES (1)"))  # holds the write lock
            waiting = asyncio.create_task(write.rows(writer, {"n": 2}, commit=True))
            await asyncio.sleep(0.3)
            assert not waiting.done()  # waiting for the lock, not failed
            await holder.commit()
            await waiting
            pragmas = [
                (await writer.exec_driver_sql(f"PRAGMA {name}")).scalar()
                for name in ("busy_timeout", "wal_autocheckpoint")
            ]
            assert pragmas == [5000, 1000]  # as configured: only a statement here runs at 0
            assert (await writer.execute(text("SELECT count(*) FROM t"))).scalar() == 2
    finally:
        await engine.dispose()


async def test_statements_here_set_the_pragmas_once_and_the_sqlite_thread_puts_them_back(
    tmp_path: Path,
) -> None:
    # Statements here that follow one another share one setting of the PRAGMAs to 0; whatever
    # aiosqlite's thread runs next (a statement, a COMMIT) runs with the configured ones.
    engine = create_engine(f"sqlite:///{tmp_path}/j.db", busy_timeout=2, pool_size=1, overflow=0)
    write = HotWrite(insert(table("t", column("n"))))
    loop_thread = threading.get_ident()
    traced: list[tuple[bool, str]] = []  # (on the event loop's thread?, SQL)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            raw.driver_connection._conn.set_trace_callback(
                lambda sql: traced.append((threading.get_ident() == loop_thread, sql))
            )
            for n in range(3):
                await write.rows(conn, {"n": n}, commit=True)
            pragmas = [sql for _, sql in traced if sql.startswith("PRAGMA")]
            assert pragmas == ["PRAGMA busy_timeout=0", "PRAGMA wal_autocheckpoint=0"]
            assert all(here for here, _ in traced) and len(traced) > 3
            traced.clear()
            assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 3
            assert traced[:2] == [
                (False, "PRAGMA busy_timeout=2000"),
                (False, "PRAGMA wal_autocheckpoint=1000"),
            ]
            assert traced[2] == (False, "SELECT count(*) FROM t")
            traced.clear()
            await write.rows(conn, {"n": 3})  # here: its transaction stays open
            await conn.commit()  # on the thread, checkpointing as configured
            assert traced[:2] == [
                (True, "PRAGMA busy_timeout=0"),
                (True, "PRAGMA wal_autocheckpoint=0"),
            ]
            assert traced[-3:] == [
                (False, "PRAGMA busy_timeout=2000"),
                (False, "PRAGMA wal_autocheckpoint=1000"),
                (False, "COMMIT"),
            ]
    finally:
        await engine.dispose()


@pytest.mark.parametrize("checkpoint_every", [sqlite_driver.CHECKPOINT_EVERY, 10**9])
async def test_hot_writes_leave_the_wal_to_the_checkpoints_of_the_sqlite_thread(
    tmp_path: Path, checkpoint_every: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A COMMIT here never checkpoints (it could take milliseconds of the event loop); one in
    # CHECKPOINT_EVERY takes the trip, where SQLite's automatic checkpoint runs. Without those
    # trips (the second case) the WAL grows past the automatic checkpoint's 1,000 pages.
    monkeypatch.setattr(sqlite_driver, "CHECKPOINT_EVERY", checkpoint_every)
    path = tmp_path / "i.db"
    engine = create_engine(f"sqlite:///{path}", pool_size=1, overflow=0)
    write = HotWrite(insert(table("t", column("n"))))
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("CREATE TABLE t (n INTEGER)")
        async with engine.connect() as conn:
            trips = await _handoffs(engine, lambda: _writes(conn, write, 1500))
            assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 1500
        wal_pages = (path.parent / f"{path.name}-wal").stat().st_size // 4096
    finally:
        await engine.dispose()
    if checkpoint_every == sqlite_driver.CHECKPOINT_EVERY:
        assert trips == 1500 // checkpoint_every
        assert wal_pages < 1000 + 2 * checkpoint_every
    else:
        assert trips == 0 and wal_pages > 1400


async def _writes(conn: Any, write: HotWrite, count: int) -> None:
    for n in range(count):
        await write.rows(conn, {"n": n}, commit=True)
