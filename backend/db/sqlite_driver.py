"""SQLAlchemy's aiosqlite adapter with one trip to aiosqlite's thread per statement.

aiosqlite runs every sqlite3 call on its own thread; each call is a queue handoff and a wake-up
of the event loop. SQLAlchemy's adapter makes four of them per statement (open a cursor,
execute, fetch the rows, close the cursor), and a ROLLBACK on every read-only session's close.
A chat turn ran 12 statements in 48 handoffs, and those handoffs, not SQLite, were most of its
database time. Here a statement is one function on that thread (cursor, execute, fetch all,
close), and a COMMIT or ROLLBACK with no transaction open is skipped: sqlite3 itself does
nothing then (it checks the same `in_transaction`). Streaming (server-side) cursors keep
SQLAlchemy's own class. `create_engine` passes `lean_dbapi()` as the engine's `module`.

`execute_and_commit` runs a transaction's last statement and its COMMIT in that one trip (the
COMMIT SQLAlchemy then asks for finds no transaction open, and is skipped).
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import aiosqlite
from sqlalchemy import Executable, Row
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.util import EMPTY_DICT

# description, rowcount, lastrowid, rows
_Outcome = tuple[Any, int, int | None, list[Any]]


def _run(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    """On aiosqlite's thread: the whole statement, rows included."""
    cursor = connection.cursor()
    try:
        cursor.execute(operation, () if parameters is None else parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, cursor.rowcount, cursor.lastrowid, rows
    finally:
        cursor.close()


def _run_and_commit(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    """`_run`, then COMMIT (only once the statement ran and its rows are read)."""
    outcome = _run(connection, operation, parameters)
    connection.commit()
    return outcome


def _run_many(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    cursor = connection.cursor()
    try:
        cursor.executemany(operation, parameters)
        return None, cursor.rowcount, cursor.lastrowid, []
    finally:
        cursor.close()


class _LeanCursor(AsyncAdapt_aiosqlite_cursor):
    """A buffered cursor whose statement runs in one call on aiosqlite's thread."""

    __slots__ = ("_description", "_rowcount", "_lastrowid", "_arraysize")

    def __init__(self, adapt_connection: Any) -> None:  # no sqlite3 cursor until a statement
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self._arraysize = 1  # sqlite3's default: what `fetchmany()` without a size returns

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return self._arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._arraysize = value

    async def _async_soft_close(self) -> None:
        return None  # nothing open on the thread: results are already buffered

    def close(self) -> None:
        self._rows.clear()

    async def _execute_async(self, operation: Any, parameters: Any) -> Any:
        adapt: _LeanConnection = self._adapt_connection  # type: ignore[assignment]
        run = _run_and_commit if adapt.commit_next else _run
        adapt.commit_next = False  # this statement only, whatever its outcome
        await self._call(run, operation, parameters)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Any) -> Any:
        await self._call(_run_many, operation, seq_of_parameters)

    async def _call(self, function: Any, operation: Any, parameters: Any) -> None:
        driver: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        async with self._adapt_connection._execute_mutex:
            # aiosqlite's own queue (untyped), as SQLAlchemy's adapter uses it for isolation
            outcome: _Outcome = await driver._execute(  # type: ignore[no-untyped-call]
                function, driver._conn, operation, parameters
            )
        self._description, self._rowcount, self._lastrowid, rows = outcome
        self._rows = collections.deque(rows)

    def nextset(self) -> None:
        raise NotImplementedError("sqlite3 has no nextset")


class _LeanConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ("commit_next",)
    _cursor_cls = _LeanCursor

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self.commit_next = False  # set by `execute_and_commit` for its statement

    def _in_transaction(self) -> bool:
        driver: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        return driver._connection is not None and driver.in_transaction

    def rollback(self) -> None:
        if self._in_transaction():
            super().rollback()

    def commit(self) -> None:
        if self._in_transaction():
            super().commit()


class _LeanDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> _LeanConnection:
        adapted = super().connect(*arg, **kw)
        return _LeanConnection(self, adapted._connection)


def lean_dbapi() -> Any:
    """The DBAPI module for `create_async_engine(..., module=...)` on SQLite."""
    return _LeanDBAPI(aiosqlite, sqlite3)


async def execute_and_commit(
    connection: AsyncConnection, statement: Executable, parameters: Mapping[str, Any]
) -> Sequence[Row[Any]]:
    """Run a transaction's last statement and commit it; its rows. On SQLite (this driver)
    the statement and the COMMIT are one trip to aiosqlite's thread; elsewhere two calls."""
    raw = await connection.get_raw_connection()
    lean = raw.dbapi_connection
    if isinstance(lean, _LeanConnection):
        lean.commit_next = True
    try:
        result = await connection.execute(statement, parameters)
        rows = result.all() if result.returns_rows else []
    finally:
        if isinstance(lean, _LeanConnection):
            lean.commit_next = False  # not run (e.g. refused before the driver was reached)
    await connection.commit()  # SQLAlchemy's bookkeeping; on SQLite no transaction is left
    return rows
