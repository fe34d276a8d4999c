"""Several driver statements of one transaction in one round trip (PostgreSQL's pipeline mode).

A statement that depends on the one before only through what the server does (a setting it
selects, a row it reads) need not wait for that one's answer: psycopg sends both, the server
runs them in order, and the answers come back together. Under load every round trip is a
wakeup of each side; the turn's preparation pays fewer of them. SQLite has no round trips to
save: there the statements run one after the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import AsyncConnection as PsycopgConnection
from sqlalchemy.ext.asyncio import AsyncSession

Statement = tuple[str, Mapping[str, Any]]  # driver SQL and its parameters


async def run_all(session: AsyncSession, statements: Sequence[Statement]) -> list[list[Any]]:
    """The rows of each statement, in order, run in the session's transaction."""
    connection = await session.connection()
    if connection.dialect.name != "postgresql" or len(statements) < 2:
        return [
            list((await connection.exec_driver_sql(sql, dict(params))).all())
            for sql, params in statements
        ]
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    assert isinstance(driver, PsycopgConnection), type(driver)
    async with driver.pipeline():
        cursors = [await driver.execute(sql, dict(params)) for sql, params in statements]
    return [list(await cursor.fetchall()) for cursor in cursors]
