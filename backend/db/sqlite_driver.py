"""SQLAlchemy's aiosqlite adapter with one trip to aiosqlite's thread per statement.

aiosqlite runs every sqlite3 call on its own thread; each call is a queue handoff and a wake-up
of the event loop. SQLAlchemy's adapter makes four of them per statement (open a cursor,
execute, fetch the rows, close the cursor), and a ROLLBACK on every read-only session's close.
A chat turn ran 12 statements in 48 handoffs, and those handoffs, not SQLite, were most of its
database time. Here a statement is one function on that thread (cursor, execute, fetch all,
close), and a COMMIT or ROLLBACK with no transaction open is skipped: sqlite3 itself does
nothing then (it checks the same `in_transaction`). Streaming (server-side) cursors keep
SQLAlchemy's own class. `create_engine` passes `lean_dbapi()` as the engine's `module`.

A statement flagged `commit_next` (`HotWrite.rows(..., commit=True)`, backend/db/hot_writes.py)
runs with its transaction's COMMIT in that one trip (the COMMIT SQLAlchemy then asks for finds
no transaction open, and is skipped). `defer` holds back
a statement whose answer nobody reads (a touch, an accounting row) until the transaction's next
statement or COMMIT, and runs it in that trip, before it: a turn's writes are one step each (on
the event loop's thread, below).

A statement asked to run `here` (`read_rows(..., here=True)`: the prebuilt reads and writes of
every request and turn, `backend/db/hot_reads.py` and `hot_writes.py`, with the small writes
`defer` held back for it) makes no trip: it runs on the calling thread, the event loop's. Such a
statement is one indexed lookup, a bounded window or a one-row write, a few microseconds in
SQLite, where the trip costs about 80 µs of two threads' wake-ups, several times that when the
machine is busy. It never waits there:
- it runs with the busy timeout at 0: a lock held by another connection (`SQLITE_BUSY`,
  `SQLITE_LOCKED`; the write lock, or for a read in WAL mode only a recovery or a connection in
  exclusive locking mode) refuses it before it changed anything, and it goes to aiosqlite's
  thread, which waits the configured timeout as any statement does;
- its COMMIT does not checkpoint the WAL (copying it into the database and syncing both can take
  milliseconds): the WAL is checkpointed by the COMMITs that take the trip, every other write's
  and one in `CHECKPOINT_EVERY` of these, as SQLite's automatic checkpoint does.
The first statement here sets both PRAGMAs to 0, and they stay so for the statements here that
follow; aiosqlite's thread puts the configured values back before the next call it runs
(`_ThreadConnection`). Setting them around every statement cost more than most statements (the
first sqlite3 call after the event loop's other work finds its caches cold), and a turn's
statements here follow one another on a connection, with a trip rarely between them.
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import aiosqlite
from sqlalchemy import Executable
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

# description, rowcount, lastrowid, rows
_Outcome = tuple[Any, int, int | None, list[Any]]
# A statement held back by `defer`: (executemany?, operation, parameters).
_Deferred = tuple[bool, str, Any]


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


def _run_many(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    cursor = connection.cursor()
    try:
        cursor.executemany(operation, parameters)
        return None, cursor.rowcount, cursor.lastrowid, []
    finally:
        cursor.close()


# sqlite3's primary result codes of a lock held by another connection (extended codes keep
# them in their low byte).
_LOCK_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


# One COMMIT in this many a connection would run `here` takes the trip instead, where SQLite
# checkpoints the WAL once it holds its automatic checkpoint's pages (1,000 by default): the WAL
# stays within about that many COMMITs more than it would.
CHECKPOINT_EVERY = 64


@dataclass(frozen=True)
class HereSettings:
    """What a connection's PRAGMAs set (backend/db/engine.py): put back on aiosqlite's thread
    after statements here ran with both at 0."""

    busy_timeout_ms: int
    autocheckpoint_pages: int


def _on_thread(
    driver: _ThreadConnection, settings: HereSettings | None, call: Callable[[], Any]
) -> Any:
    """On aiosqlite's thread: the PRAGMAs as configured again when statements here set them to
    0 (`settings`), then its call; counted as finished whatever its outcome."""
    try:
        if settings is not None:
            connection = driver._conn
            connection.execute(f"PRAGMA busy_timeout={settings.busy_timeout_ms}")
            connection.execute(f"PRAGMA wal_autocheckpoint={settings.autocheckpoint_pages}")
        return call()
    finally:
        driver.finished += 1


class _ThreadConnection(aiosqlite.Connection):
    """aiosqlite's connection; every call of its thread (statement, COMMIT, close...) goes
    through `_execute`, which counts it and has the thread first put back the PRAGMAs
    statements here set to 0."""

    here: HereSettings | None = None  # set: the PRAGMAs are at 0, these are the configured ones
    # Each counted by one thread only: `queued` on the event loop's, `finished` on aiosqlite's.
    queued = 0
    finished = 0

    @property
    def idle(self) -> bool:
        """No call queued or under way on the thread, not even one whose caller was cancelled
        while the thread ran it: a statement may run on the event loop's thread."""
        return self.queued == self.finished

    async def _execute(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        settings, self.here = self.here, None
        self.queued += 1  # never finished when refused (closed): nothing runs here then either
        call = partial(fn, *args, **kwargs)
        return await super()._execute(_on_thread, self, settings, call)  # type: ignore[no-untyped-call]


def _thread_connection(database: str, **kwargs: Any) -> _ThreadConnection:
    """`aiosqlite.connect` for SQLAlchemy's `async_creator_fn`, as `_ThreadConnection`."""
    connector = partial(sqlite3.connect, database, **kwargs)
    connection = _ThreadConnection(connector, iter_chunk_size=64)  # aiosqlite.connect's default
    connection._thread.daemon = True  # as SQLAlchemy's adapter sets it for its own connect
    return connection


def _run_here(
    driver: _ThreadConnection,
    deferred: list[_Deferred],
    many: bool,
    operation: str,
    parameters: Any,
    commit: bool,
    settings: HereSettings,
) -> _Outcome | None:
    """`_statement` on the calling thread, without waiting for a lock or checkpointing; None
    when another connection holds a lock it needs (nothing was changed)."""
    connection = driver._conn
    changes = connection.total_changes
    if driver.here is None:
        driver.here = settings  # first: the thread puts them back whatever happens next
        connection.execute("PRAGMA busy_timeout=0")
        connection.execute("PRAGMA wal_autocheckpoint=0")
    try:
        return _statement(connection, deferred, many, operation, parameters, commit)
    except sqlite3.OperationalError as error:
        code = getattr(error, "sqlite_errorcode", None)  # None when raised outside SQLite
        held = code is not None and code & 0xFF in _LOCK_CODES
        if held and connection.total_changes == changes:  # refused before any change
            return None
        raise


def _run_deferred(connection: sqlite3.Connection, deferred: list[_Deferred]) -> None:
    for many, operation, parameters in deferred:
        (_run_many if many else _run)(connection, operation, parameters)


def _statement(
    connection: sqlite3.Connection,
    deferred: list[_Deferred],
    many: bool,
    operation: str,
    parameters: Any,
    commit: bool,
) -> _Outcome:
    """The statements held back, the statement, then COMMIT if asked (only once the statement
    ran and its rows are read): on aiosqlite's thread, or on the caller's (`_run_here`)."""
    _run_deferred(connection, deferred)
    outcome = (_run_many if many else _run)(connection, operation, parameters)
    if commit:
        connection.commit()
    return outcome


def _deferred_and_commit(connection: sqlite3.Connection, deferred: list[_Deferred]) -> None:
    """On aiosqlite's thread: a COMMIT and the statements held back for it. One that fails
    rolls the transaction back: SQLAlchemy takes a failed COMMIT as the transaction's end, so
    the next statement on this connection would otherwise commit what came before it."""
    try:
        _run_deferred(connection, deferred)
    except BaseException:
        connection.rollback()
        raise
    connection.commit()


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
        await self._call(False, operation, parameters)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Any) -> Any:
        await self._call(True, operation, seq_of_parameters)

    async def _call(
        self, many: bool, operation: Any, parameters: Any, *, here: bool = False
    ) -> None:
        """Run the statement: held back (`defer`), on this thread (`here`, module docstring),
        or in one trip to aiosqlite's thread."""
        adapt: LeanConnection = self._adapt_connection  # type: ignore[assignment]
        # Both flags are for this statement only, whatever its outcome.
        commit, adapt.commit_next = adapt.commit_next, False
        if adapt.defer_next:
            adapt.defer_next = False
            adapt.deferred.append((many, operation, parameters))
            self._done((None, -1, None, []))  # no answer: `defer` reads none
            return
        outcome: _Outcome | None = None
        deferred, adapt.deferred = adapt.deferred, []
        driver: _ThreadConnection = self._connection  # type: ignore[assignment]
        settings = adapt.here_settings() if here else None
        if settings is not None and not (commit and adapt.checkpoint_due()):
            outcome = _run_here(driver, deferred, many, operation, parameters, commit, settings)
        if outcome is None:
            async with adapt._execute_mutex:
                # aiosqlite's own queue, as SQLAlchemy's adapter uses it for isolation
                outcome = await driver._execute(
                    _statement, driver._conn, deferred, many, operation, parameters, commit
                )
        self._done(outcome)

    def _done(self, outcome: _Outcome) -> None:
        self._description, self._rowcount, self._lastrowid, rows = outcome
        self._rows = collections.deque(rows)

    def nextset(self) -> None:
        raise NotImplementedError("sqlite3 has no nextset")


class LeanConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ("commit_next", "commits_here", "defer_next", "deferred", "settings")
    _cursor_cls = _LeanCursor

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self.commit_next = False  # set for its statement by `driver_rows(..., commit=True)`
        self.defer_next = False  # set by `defer` for its statement
        self.deferred: list[_Deferred] = []  # held back until the next trip
        # What its PRAGMAs set (backend/db/engine.py); None until then: nothing runs here.
        self.settings: HereSettings | None = None
        self.commits_here = 0  # COMMITs asked to run here (`checkpoint_due`)

    def checkpoint_due(self) -> bool:
        """Whether this COMMIT asked to run here takes the trip, to checkpoint the WAL there."""
        self.commits_here += 1
        return self.commits_here % CHECKPOINT_EVERY == 0

    def here_settings(self) -> HereSettings | None:
        """What aiosqlite's thread puts back after a statement on the calling thread, or None
        when none may run there now: the thread has a call of this connection (a trip, a
        COMMIT), or it is closed."""
        driver: _ThreadConnection = self._connection  # type: ignore[assignment]
        if not driver.idle or not driver._running or driver._connection is None:
            return None
        return self.settings

    def _in_transaction(self) -> bool:
        driver: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        return driver._connection is not None and driver.in_transaction

    def rollback(self) -> None:
        self.deferred = []  # never sent: nothing of theirs to undo
        if self._in_transaction():
            super().rollback()

    def commit(self) -> None:
        if self.deferred:
            deferred, self.deferred = self.deferred, []
            driver: aiosqlite.Connection = self._connection  # type: ignore[assignment]
            try:
                await_(driver._execute(_deferred_and_commit, driver._conn, deferred))  # type: ignore[no-untyped-call]
            except Exception as error:
                self._handle_exception(error)
        elif self._in_transaction():
            super().commit()

    @property
    def pending(self) -> bool:
        """Whether a transaction is open or statements wait to begin one."""
        return bool(self.deferred) or self._in_transaction()


class _LeanDBAPI(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> LeanConnection:
        # Statements `here` use the connection on the event loop's thread; never two threads
        # at once: one runs there only while aiosqlite's thread has no call of the connection,
        # not even one whose caller was cancelled (`here_settings`).
        kw["check_same_thread"] = False
        kw["async_creator_fn"] = _thread_connection
        adapted = super().connect(*arg, **kw)
        return LeanConnection(self, adapted._connection)


def lean_dbapi() -> Any:
    """The DBAPI module for `create_async_engine(..., module=...)` on SQLite."""
    return _LeanDBAPI(aiosqlite, sqlite3)


async def _lean(connection: AsyncConnection) -> LeanConnection | None:
    raw = await connection.get_raw_connection()
    lean = raw.dbapi_connection
    return lean if isinstance(lean, LeanConnection) else None


async def defer(
    connection: AsyncConnection,
    statement: Executable,
    parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """Run `statement`, a small write whose answer (rows, rowcount) nobody reads, in the
    transaction: on SQLite (this driver) with the transaction's next statement or COMMIT, just
    before it (on the event loop's thread when that one runs `here`); elsewhere now. An error it
    meets is raised by that statement or COMMIT, and a rollback before it drops it unsent."""
    lean = await _lean(connection)
    if lean is None:
        await connection.execute(statement, parameters)
        return
    lean.defer_next = True
    try:
        await connection.execute(statement, parameters)
    finally:
        lean.defer_next = False  # not reached the driver (e.g. refused before): not held


def lean_connection(dbapi_connection: Any) -> LeanConnection | None:
    """The pooled DBAPI connection as this driver's, or None on another driver."""
    return dbapi_connection if isinstance(dbapi_connection, LeanConnection) else None


async def read_rows(
    connection: LeanConnection,
    operation: str,
    parameters: Mapping[str, Any] | Sequence[Any],
    *,
    here: bool = False,
) -> list[Any]:
    """A statement's rows in one trip (the statements held back go first), no SQLAlchemy
    execution around it (`backend/db/hot_reads.py`); `here`: a bounded read or a one-row
    write, run on this thread unless a lock is held (module docstring)."""
    cursor = _LeanCursor(connection)
    try:
        await cursor._call(False, operation, parameters, here=here)
    except Exception as error:  # aiosqlite's closed connection as sqlite3's error, as SQLAlchemy's
        connection._handle_exception(error)  # adapter raises it
    return list(cursor._rows)
