"""The SQLite engine: WAL, foreign keys, and writes that wait for the write lock instead of
failing at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import text

from backend.db.engine import create_engine


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
