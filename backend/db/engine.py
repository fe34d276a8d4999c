"""Async engine and session factory for PostgreSQL (psycopg 3) and SQLite (aiosqlite)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import PoolResetState

from backend.db.sqlite_driver import HereSettings, lean_connection, lean_dbapi

_ASYNC_DRIVERS = {"postgresql": "postgresql+psycopg", "sqlite": "sqlite+aiosqlite"}
_SYNC_DRIVERS = {"postgresql": "postgresql+psycopg", "sqlite": "sqlite"}


def _with_driver(url: str, drivers: dict[str, str]) -> URL:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend not in drivers:
        raise ValueError(f"unsupported database {backend!r}: use postgresql or sqlite")
    return parsed.set(drivername=drivers[backend])


def async_url(url: str) -> URL:
    """`postgresql://` and `sqlite://` URLs get the async drivers this service uses."""
    return _with_driver(url, _ASYNC_DRIVERS)


def sync_url(url: str) -> URL:
    """The same database through a blocking driver (Alembic runs synchronously)."""
    return _with_driver(url, _SYNC_DRIVERS)


def _sqlite_pragmas(busy_timeout: float) -> Callable[[Any, Any], None]:
    def connect(dbapi_connection: Any, _record: Any) -> None:
        # Foreign keys are off by default in SQLite; WAL lets readers run beside the writer, and
        # in WAL mode synchronous=NORMAL cannot corrupt the database (a power cut may lose the
        # last commits) while sparing an fsync per commit. The driver begins a transaction only
        # at a transaction's first write (its reads before that run on their own), so a write
        # never upgrades a read snapshot: it waits for the write lock up to `busy_timeout`.
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cursor.execute("PRAGMA wal_autocheckpoint")
        (autocheckpoint,) = cursor.fetchone()
        cursor.close()
        lean = lean_connection(dbapi_connection)
        if lean is not None:  # what a statement run on the event loop's thread restores
            lean.settings = HereSettings(int(busy_timeout * 1000), int(autocheckpoint))

    return connect


def _sqlite_reset(dbapi_connection: Any, _record: Any, state: PoolResetState) -> None:
    """The pool's reset on return, only when a transaction is open or statements are held
    back (`defer`). A Session closes its transaction itself, so the pool's unconditional
    ROLLBACK was a no-op, yet each one is a round trip to aiosqlite's thread (two per
    read-only session, one per committed one). Where asyncio cannot run the pool discards the
    connection instead."""
    if state.asyncio_safe and dbapi_connection.pending:
        dbapi_connection.rollback()


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    pool_timeout: float = 30.0,
    busy_timeout: float = 30.0,
    autocommit: bool = False,
    overflow: int | None = None,
    pre_ping: bool = True,
) -> AsyncEngine:
    """`pool_timeout`: how long a checkout waits for a free connection before SQLAlchemy's
    `TimeoutError`; `busy_timeout` (SQLite): how long a write waits for the write lock before
    "database is locked". The API answers both 503 `dependency_unavailable`. `overflow`:
    connections beyond `pool_size` (default: as many again). `autocommit`: each statement is
    its own transaction, with no BEGIN / ROLLBACK round trips (single-statement reads).
    `pre_ping` (PostgreSQL): a round trip per checkout, so a connection the server closed is
    replaced before a statement fails on it; without it, connections are replaced after
    `RECYCLE_S` instead."""
    target = async_url(url)
    pool: dict[str, Any] = {
        "pool_size": pool_size,
        "max_overflow": pool_size if overflow is None else overflow,
        "pool_timeout": pool_timeout,
    }
    if autocommit:
        pool["isolation_level"] = "AUTOCOMMIT"
    if target.get_backend_name() == "sqlite":
        in_memory = target.database in (None, "", ":memory:")  # one shared connection
        engine = create_async_engine(
            target,
            module=lean_dbapi(),  # one trip to aiosqlite's thread per statement
            pool_reset_on_return=None,
            **({} if in_memory else pool),
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas(busy_timeout))
        event.listen(engine.sync_engine, "reset", _sqlite_reset)
        return engine
    recycle = -1 if pre_ping else RECYCLE_S
    return create_async_engine(target, pool_pre_ping=pre_ping, pool_recycle=recycle, **pool)


# Without a ping, a connection is replaced after this long, so one that an idle timeout (server,
# proxy) closed is rarely met.
RECYCLE_S = 300


def create_auth_engine(
    url: str, main: AsyncEngine, *, pool_size: int, pool_timeout: float, busy_timeout: float
) -> AsyncEngine:
    """The pool authentication reads on (`backend/auth/requests.py`): autocommit, no
    overflow, no pre-ping. Under the load test on PostgreSQL the ping made `/me`'s p99 1.3 s
    instead of 0.25 s (side by side); without it, a read on a connection the server closed
    fails, the pool replaces the connections opened before that failure, and `RequestAuth`
    reads once more on a new one. An in-memory SQLite database is one connection: there it is
    `main`."""
    target = async_url(url)
    if target.get_backend_name() == "sqlite" and target.database in (None, "", ":memory:"):
        return main
    return create_engine(
        url,
        pool_size=pool_size,
        pool_timeout=pool_timeout,
        busy_timeout=busy_timeout,
        autocommit=True,
        overflow=0,
        pre_ping=False,
    )


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
