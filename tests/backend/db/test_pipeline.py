"""Statements run together (backend/db/pipeline.py): in order, in the session's transaction."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from backend.db.engine import create_sessionmaker
from backend.db.pipeline import run_all


async def test_each_statement_s_rows_in_order_and_a_later_one_sees_an_earlier_one_s_work(
    engine: AsyncEngine, db_backend: str
) -> None:
    async with create_sessionmaker(engine)() as session:
        await session.execute(text("CREATE TEMPORARY TABLE notes (n INTEGER)"))
        rows = await run_all(
            session,
            [
                ("INSERT INTO notes (n) VALUES (1), (2) RETURNING n", {}),
                ("SELECT count(*) FROM notes WHERE n >= %(low)s", {"low": 2})
                if db_backend == "postgresql"
                else ("SELECT count(*) FROM notes WHERE n >= :low", {"low": 2}),
                ("SELECT n * 10 FROM notes ORDER BY n", {}),
            ],
        )
        assert [[tuple(r) for r in result] for result in rows] == [
            [(1,), (2,)],
            [(1,)],
            [(10,), (20,)],
        ]
        # Still the session's transaction: what the statements wrote is there until it ends.
        assert (await session.execute(text("SELECT count(*) FROM notes"))).scalar() == 2
        await session.rollback()


async def test_one_statement_runs_as_the_session_runs_it(engine: AsyncEngine) -> None:
    async with create_sessionmaker(engine)() as session:
        (rows,) = await run_all(session, [("SELECT 7", {})])
    assert [tuple(r) for r in rows] == [(7,)]


async def test_a_hostile_value_stays_a_value(engine: AsyncEngine, db_backend: str) -> None:
    """PostgreSQL binds the parameters on the client (one multi-statement query): a value with
    quotes, a backslash, a semicolon and a comment is still one string value."""
    hostile = "x'); DROP TABLE notes; -- \\' \"%s %(n)s"
    mark = "%(v)s" if db_backend == "postgresql" else ":v"
    async with create_sessionmaker(engine)() as session:
        await session.execute(text("CREATE TEMPORARY TABLE notes (n INTEGER)"))
        rows = await run_all(
            session,
            [
                (f"SELECT {mark}, length({mark})", {"v": hostile}),
                ("SELECT count(*) FROM notes", {}),
            ],
        )
        assert [[tuple(r) for r in result] for result in rows] == [
            [(hostile, len(hostile))],
            [(0,)],
        ]
        await session.rollback()


@pytest.mark.parametrize("db_backend", ["postgresql"], indirect=True)
async def test_a_setting_the_first_selects_holds_for_the_next(engine: AsyncEngine) -> None:
    """What the search relies on: a transaction-local setting selected by one statement is in
    force for the statements after it (planner settings are PostgreSQL's)."""
    async with create_sessionmaker(engine)() as session:
        rows = await run_all(
            session,
            [
                ("SELECT set_config('enable_seqscan', 'off', true)", {}),
                ("SELECT current_setting('enable_seqscan')", {}),
            ],
        )
        assert rows[1][0][0] == "off"
        await session.rollback()


@pytest.mark.parametrize("db_backend", ["postgresql"], indirect=True)
async def test_statements_binding_one_name_to_two_values_are_refused(engine: AsyncEngine) -> None:
    """PostgreSQL binds the statements together (SQLite binds each alone)."""
    async with create_sessionmaker(engine)() as session:
        with pytest.raises(ValueError, match="different values"):
            await run_all(session, [("SELECT %(a)s", {"a": 1}), ("SELECT %(a)s", {"a": 2})])
