"""The one `Settings` class (prefix `SKILLHIVE_`). docs/configuration.md lists every field."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "SKILLHIVE_"

MiB = 1024 * 1024

# Variables with our prefix that are read by something other than the server's Settings:
# the CLI client (`skillhive skills push`) and the test suite. Not reported as unknown.
NON_SERVER_VARIABLES = frozenset(
    {"SKILLHIVE_URL", "SKILLHIVE_TOKEN", "SKILLHIVE_TEST_POSTGRES_URL", "SKILLHIVE_TEST_REDIS_URL"}
    | {"SKILLHIVE_CORPUS_DIR", "SKILLHIVE_REQUIRE_CORPUS"}
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # --- process -------------------------------------------------------------------------
    env: Literal["development", "production"] = Field(
        "development", description="`production` refuses to start without a secrets key."
    )
    host: str = Field("127.0.0.1", description="Address `skillhive serve` binds.")
    port: int = Field(8000, ge=1, le=65535, description="Port `skillhive serve` binds.")
    data_dir: Path = Field(Path("data"), description="Where the embedded SQLite file lives.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO")
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins allowed to open Socket.IO connections (JSON list); "
        "empty: same origin only.",
    )

    # --- services ------------------------------------------------------------------------
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL, e.g. postgresql+psycopg://u:p@host/db. "
        "Unset: SQLite file `<data_dir>/skillhive.db`.",
    )
    redis_url: str | None = Field(
        None, description="redis://... Unset: embedded mode (in-process turns, no Redis)."
    )
    database_pool_size: int = Field(10, ge=1, description="PostgreSQL connection pool size.")

    # --- auth ----------------------------------------------------------------------------
    bootstrap_admin_token: SecretStr | None = Field(
        None,
        description="If set and no admin exists at start-up, create user `admin` with this token.",
    )

    # --- skill package limits (DESIGN.md §5) ---------------------------------------------
    max_archive_bytes: int = Field(10 * MiB, ge=1, description="Compressed upload size cap.")
    max_archive_entries: int = Field(1000, ge=1, description="Entries per archive.")
    max_uncompressed_bytes: int = Field(100 * MiB, ge=1, description="Sum of entry sizes.")
    max_compression_ratio: float = Field(100.0, gt=1, description="Per-entry ratio cap.")
    compression_ratio_min_bytes: int = Field(
        1 * MiB, ge=0, description="The ratio cap applies to entries larger than this."
    )
    max_skill_md_bytes: int = Field(1 * MiB, ge=1, description="SKILL.md size cap.")
    builtin_skills_dir: Path | None = Field(
        None, description="Folder of built-in public skills; unset: `skills/` of the install."
    )

    # --- chat ----------------------------------------------------------------------------
    model: str = Field(
        "offline", description="Default model: `offline` (no network) or a model name."
    )
    openai_base_url: str | None = Field(None, description="OpenAI-compatible endpoint.")
    openai_api_key: SecretStr | None = Field(None, description="Key for that endpoint.")
    mcp_servers: dict[str, Any] = Field(
        default_factory=dict, description="Global MCP servers (JSON), trusted (stdio allowed)."
    )
    worker_concurrency: int = Field(
        8, ge=1, le=1000, description="Turns one `skillhive worker` process runs at once."
    )
    turn_lease_seconds: float = Field(
        15.0,
        gt=0,
        description="A turn whose worker stopped heartbeating for this long is run again "
        "by another worker.",
    )
    package_cache_bytes: int = Field(
        64 * MiB, ge=0, description="Memory for skill packages cached by hash (tool providers)."
    )
    catalog_budget_tokens: int = Field(
        4000,
        ge=0,
        description="Tokens a Ghost's skill catalog may take before the prompt lists only a "
        "compact catalog and offers `search_skills`; a Ghost's `catalogBudgetTokens` overrides it.",
    )
    skill_search_threshold: float = Field(
        0.32,
        ge=0,
        le=1,
        description="Score (0-1) under which skill search suggests nothing, so small talk "
        "loads no skill.",
    )
    secrets_key: SecretStr | None = Field(
        None, description="Fernet key encrypting user secrets at rest."
    )

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'skillhive.db').resolve()}"


def unknown_env_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """`SKILLHIVE_*` variables that match no setting: most likely typos, reported at start-up."""
    env = os.environ if environ is None else environ
    known = {ENV_PREFIX + name.upper() for name in Settings.model_fields} | NON_SERVER_VARIABLES
    return sorted(k for k in env if k.upper().startswith(ENV_PREFIX) and k.upper() not in known)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
