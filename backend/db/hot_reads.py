"""Prebuilt SELECTs run straight on the driver: the reads every request or turn makes.

SQLAlchemy's execution of a prebuilt Core statement (a greenlet, an execution context, a cursor
result and its rows) costs about 150-200 µs of CPU per statement here, more than SQLite takes to
run these. A `HotRead` compiles its statement once per dialect and runs it on the connection's
own driver connection: on SQLite on the event loop's own thread, no trip to aiosqlite's (unless
another connection holds a lock, or statements held back must go first: then in the lean
driver's one trip, `backend/db/sqlite_driver.py`), so a `HotRead` reads a bounded set of rows;
on PostgreSQL on a psycopg cursor. Each column goes through its type's result processor, as
SQLAlchemy's would, and rows are named tuples (attributes, indexes, `_asdict()`).

A statement runs in the connection's transaction, begun through SQLAlchemy first as its own
execution would begin it, so SQLAlchemy's commit and rollback end what the driver began (the
turn's writes go the same way: `backend/db/hot_writes.py`). A driver error comes out as
SQLAlchemy's (`DBAPIError.instance`); a connection the server closed is invalidated with every
older one of its pool, and one whose statement was cancelled is dropped, as SQLAlchemy's
execution does: callers handle both as they would.
"""

from __future__ import annotations

import asyncio
import logging
import reprlib
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import ClauseElement, Dialect, Select
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.sql import sqltypes
from sqlalchemy.sql.compiler import SQLCompiler

from backend.db.sqlite_driver import LeanConnection, lean_connection, read_rows


@dataclass(frozen=True)
class _Compiled:
    sql: str
    compiled: SQLCompiler
    positional: tuple[str, ...] | None  # qmark dialects: the parameters' order
    processors: tuple[Callable[[Any], Any] | None, ...]
    row: Callable[..., tuple[Any, ...]]


def compile_for_driver(statement: ClauseElement, dialect: Dialect) -> SQLCompiler:
    """`statement` compiled once for `dialect`, to run on the driver as it is; refused
    (`TypeError`) when SQLAlchemy would complete it at execution time (an IN list)."""
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    if "POSTCOMPILE" in compiled.string or any(b.expanding for b in compiled.bind_names):
        raise TypeError("the statement is completed at execution time")
    return compiled


class HotRead:
    """One SELECT of a bounded set of rows (an indexed lookup, a capped window), compiled once
    per dialect, run on the driver (module docstring)."""

    def __init__(self, statement: Select[*tuple[Any, ...]]) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def _compile(self, dialect: Dialect) -> _Compiled:
        found = self._by_dialect.get(dialect.name)
        if found is not None:
            return found
        compiled = compile_for_driver(self.statement, dialect)
        sql = compiled.string
        for bind in compiled.binds.values():  # values go to the driver as given
            if bind.type.dialect_impl(dialect).bind_processor(dialect):
                raise TypeError(f"{bind.key!r} needs SQLAlchemy's parameter processing")
        columns = list(self.statement.selected_columns)
        for c in columns:  # their processors depend on the column type the driver reports
            if isinstance(c.type, sqltypes.Numeric):
                raise TypeError(f"{c.key!r} needs SQLAlchemy's result processing")
        processors = tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        )
        keys = list(self.statement.selected_columns.keys())
        found = _Compiled(
            sql,
            compiled,
            tuple(compiled.positiontup) if compiled.positional and compiled.positiontup else None,
            processors,
            namedtuple("Row", keys, rename=True),  # noqa: PYI024
        )
        self._by_dialect[dialect.name] = found
        return found

    async def rows(
        self, executor: AsyncConnection | AsyncSession, params: Mapping[str, Any]
    ) -> list[Any]:
        """The statement's rows on `executor`'s connection, in its transaction."""
        connection = executor if isinstance(executor, AsyncConnection) else None
        if connection is None:
            assert isinstance(executor, AsyncSession)
            connection = await executor.connection()
        prepared = self._compile(connection.dialect)
        bound = prepared.compiled.construct_params(dict(params))
        values = [bound[k] for k in prepared.positional] if prepared.positional else bound
        found = await driver_rows(connection, prepared.sql, values, here=True)
        return [prepared.row(*_processed(prepared.processors, r)) for r in found]


async def driver_rows(
    connection: AsyncConnection,
    sql: str,
    params: Mapping[str, Any] | Sequence[Any],
    *,
    commit: bool = False,
    here: bool = False,
) -> list[Sequence[Any]]:
    """The rows of driver SQL (the dialect's own parameter style) as the driver gives them,
    like `exec_driver_sql(...).all()` without SQLAlchemy's execution around it. `commit`: on
    SQLite the COMMIT goes in the statement's step (the caller still calls `commit()`, which
    then finds nothing to do); elsewhere it is the caller's `commit()`. `here`: a bounded read
    or a one-row write, which on SQLite runs on this thread unless a lock is held
    (`sqlite_driver`)."""
    driver, lean = await _driver(connection)
    _log(sql, params)
    try:
        if lean is not None:
            lean.commit_next = commit  # for this statement only (read_rows clears it)
            # sqlite3 binds names from a dict only (not any mapping)
            return await read_rows(
                lean, sql, dict(params) if isinstance(params, Mapping) else params, here=here
            )
        async with driver.driver_connection.cursor() as cursor:
            await cursor.execute(sql, params)
            return list(await cursor.fetchall()) if cursor.description else []
    except BaseException as exc:
        mapped = await _failed(connection, driver, sql, params, exc)
        if mapped is None:
            raise
        raise mapped from exc


async def driver_defer(
    connection: AsyncConnection, sql: str, params: Any, *, many: bool = False
) -> None:
    """Driver SQL whose answer nobody reads (`many`: once per parameter set of a sequence), in
    the transaction: on SQLite held back until the connection's next statement or COMMIT
    (`sqlite_driver.defer`; a small write: it may go with a statement run on the event loop's
    thread), elsewhere run now."""
    driver, lean = await _driver(connection)
    _log(sql, params)
    if lean is not None:
        lean.deferred.append((many, sql, params))
        return
    try:
        async with driver.driver_connection.cursor() as cursor:
            if many:
                await cursor.executemany(sql, params)
            else:
                await cursor.execute(sql, params)
    except BaseException as exc:
        mapped = await _failed(connection, driver, sql, params, exc)
        if mapped is None:
            raise
        raise mapped from exc


# SQLAlchemy's own statement log: an operator who opens `sqlalchemy.engine` at INFO sees these
# statements too, parameters shortened as SQLAlchemy shortens them.
_ENGINE_LOG = logging.getLogger("sqlalchemy.engine.Engine")
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 300
_SHORT.maxlist = _SHORT.maxdict = 50


def _log(sql: str, params: Any) -> None:
    if _ENGINE_LOG.isEnabledFor(logging.INFO):
        _ENGINE_LOG.info("%s", sql)
        _ENGINE_LOG.info("[direct] %s", _SHORT.repr(params))


async def _driver(connection: AsyncConnection) -> tuple[Any, LeanConnection | None]:
    """The pooled connection and, on SQLite, its lean driver; in a transaction, as SQLAlchemy's
    execution would begin it (its commit and rollback then end what the driver began).

    A connection that is open and valid has its pooled connection at hand, and beginning its
    transaction sends nothing (both drivers begin implicitly at the first statement): both are
    done on SQLAlchemy's synchronous connection, without the greenlet its async calls take, a
    turn's largest cost after its statements. Otherwise through the async calls, which can
    reconnect."""
    sync = connection.sync_connection
    if sync is not None and not (sync.closed or sync.invalidated):
        if not sync.in_transaction():
            sync.begin()
        raw: Any = sync.connection
    else:
        if not connection.in_transaction():
            await connection.begin()
        raw = await connection.get_raw_connection()
    lean = lean_connection(raw.dbapi_connection)
    if lean is None and connection.dialect.name != "postgresql":
        raise TypeError(f"no direct statements on {connection.dialect.name}")
    return raw, lean


async def _failed(
    connection: AsyncConnection, raw: Any, sql: str, params: Any, exc: BaseException
) -> StatementError | None:
    """A driver statement's failure as SQLAlchemy's execution handles it: a driver error
    becomes SQLAlchemy's (`DBAPIError.instance`), a connection the server closed is
    invalidated with every older one of its pool, one whose statement was cancelled is
    dropped. None: raise `exc` as it is."""
    dialect = connection.dialect
    if isinstance(exc, asyncio.CancelledError):  # a statement cut short is not reused; a
        await connection.invalidate()  # second cancel meets SQLAlchemy's own force-close
        return None
    error: type[Exception] = dialect.loaded_dbapi.Error
    if not isinstance(exc, error):
        return None
    gone = dialect.is_disconnect(cast(Any, exc), raw.dbapi_connection, None)
    if gone:  # as SQLAlchemy does: every connection opened before this one goes too
        # (only marked here: the close is SQLAlchemy's, in its greenlet, just below)
        connection.sync_engine.pool._invalidate(raw, exc, _checkin=False)
        await connection.invalidate(exc)
    return DBAPIError.instance(
        sql, params, exc, error, connection_invalidated=gone, dialect=dialect
    )


def _processed(
    processors: tuple[Callable[[Any], Any] | None, ...], row: Sequence[Any]
) -> list[Any]:
    return [v if p is None else p(v) for p, v in zip(processors, row, strict=True)]
