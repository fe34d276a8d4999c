"""Run and check Alembic migrations programmatically (CLI `skillhive migrate`, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, pool

from backend.db.engine import sync_url
from backend.db.models import Base, include_in_schema, include_name


def _alembic_ini() -> Path:
    # Source checkout (editable install) first, then the working directory (container image).
    for candidate in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (candidate / "alembic.ini").is_file():
            return candidate / "alembic.ini"
    raise FileNotFoundError("alembic.ini not found next to the source tree or in the cwd")


def alembic_config(database_url: str) -> Config:
    cfg = Config(str(_alembic_ini()))
    # render_as_string keeps a password in the URL intact (Alembic interpolates `%`).
    url = sync_url(database_url).render_as_string(hide_password=False).replace("%", "%%")
    cfg.set_main_option("sqlalchemy.url", url)
    cfg.attributes["configure_logger"] = False
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def schema_differences(database_url: str) -> list[object]:
    """What autogenerate would change: empty when the database matches the models."""
    engine = create_engine(sync_url(database_url), poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn,
                opts={
                    "compare_type": True,
                    "include_object": include_in_schema,
                    "include_name": include_name,
                },
            )
            return list(compare_metadata(ctx, Base.metadata))
    finally:
        engine.dispose()
