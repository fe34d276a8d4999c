"""Prebuilt INSERTs and UPDATEs run straight on the driver: the writes every turn makes.

What `backend/db/hot_reads.py` does for reads, for the same reason: SQLAlchemy's execution of a
prebuilt Core write (an execution context, parameter processing, a cursor result) cost about
90 µs of CPU per statement here, more than SQLite took to run it, and a turn makes four. A
`HotWrite` compiles its statement once per dialect and prepares the parameters as SQLAlchemy's
execution would: a value not given takes its column's Python-side default (`default=`, or
`onupdate=` for an UPDATE), then each bind goes through its type's processor (JSON, UTC
datetimes, NUL-free text).

On SQLite it runs on the event loop's thread unless another connection holds the write lock (a
one-row write: `backend/db/sqlite_driver.py`, `here`). It runs in the connection's transaction,
begun through SQLAlchemy as its own execution would begin it, so the caller's `commit()` and
`rollback()` (and the pool's reset) end it as they end any other. `rows(..., commit=True)`
commits it (on SQLite the COMMIT goes in the statement's step); `defer` holds the statement back
until the transaction's next statement or COMMIT, as `sqlite_driver.defer` does. Errors come out
as SQLAlchemy's (`IntegrityError`, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Dialect, Insert, Update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.schema import ColumnDefault

from backend.db.hot_reads import compile_for_driver, driver_defer, driver_rows

Parameters = (
    MutableMapping[str, Any] | list[Any]
)  # the driver's: named, or positional (qmark dialects)


@dataclass(frozen=True)
class _Compiled:
    sql: str
    compiled: SQLCompiler
    positional: tuple[str, ...] | None  # qmark dialects: the parameters' order
    defaults: tuple[tuple[str, Callable[[], Any]], ...]  # a value not given: its column's
    processors: tuple[tuple[str, Callable[[Any], Any]], ...]  # bind name -> its type's


def _default(default: Any) -> Callable[[], Any]:
    if not isinstance(default, ColumnDefault) or not (default.is_scalar or default.is_callable):
        raise TypeError(f"{default!r} needs SQLAlchemy's execution")
    if default.is_scalar:
        value = default.arg
        return lambda: value
    make = default.arg  # SQLAlchemy wraps a callable to take the execution context
    return lambda: make(None)


class HotWrite:
    """One INSERT or UPDATE, compiled once per dialect, run on the driver (module docstring)."""

    def __init__(self, statement: Insert | Update) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def _compile(self, dialect: Dialect) -> _Compiled:
        found = self._by_dialect.get(dialect.name)
        if found is not None:
            return found
        compiled = compile_for_driver(self.statement, dialect)
        defaults = [(c.key, _default(c.default)) for c in compiled.insert_prefetch]
        defaults += [(c.key, _default(c.onupdate)) for c in compiled.update_prefetch]
        processors = []
        for bind, name in compiled.bind_names.items():
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                processors.append((name, process))
        found = _Compiled(
            compiled.string,
            compiled,
            tuple(compiled.positiontup) if compiled.positional and compiled.positiontup else None,
            tuple(defaults),
            tuple(processors),
        )
        self._by_dialect[dialect.name] = found
        return found

    def _parameters(self, prepared: _Compiled, params: Mapping[str, Any]) -> Parameters:
        given = dict(params)
        for key, make in prepared.defaults:
            if key not in given:
                given[key] = make()
        bound = prepared.compiled.construct_params(given)
        for name, process in prepared.processors:
            bound[name] = process(bound[name])
        return [bound[k] for k in prepared.positional] if prepared.positional else bound

    async def rows(
        self, connection: AsyncConnection, params: Mapping[str, Any], *, commit: bool = False
    ) -> list[Sequence[Any]]:
        """The statement's RETURNING rows (none without), run in the connection's transaction;
        `commit`: then committed, with everything before it."""
        prepared = self._compile(connection.dialect)
        found = await driver_rows(
            connection, prepared.sql, self._parameters(prepared, params), commit=commit, here=True
        )
        if commit:
            await connection.commit()  # on SQLite only SQLAlchemy's bookkeeping is left
        return found

    async def defer(
        self, connection: AsyncConnection, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> None:
        """Run the statement (once per mapping of a sequence), whose answer nobody reads, in the
        transaction: on SQLite with its next statement or COMMIT, just before it; elsewhere
        now. An error it meets is raised by that statement or COMMIT."""
        prepared = self._compile(connection.dialect)
        if isinstance(params, Mapping):
            await driver_defer(connection, prepared.sql, self._parameters(prepared, params))
        else:
            rows = [self._parameters(prepared, p) for p in params]
            await driver_defer(connection, prepared.sql, rows, many=True)
