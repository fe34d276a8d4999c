"""The one `Settings` class (prefix `SKILLHIVE_`). docs/configuration.md lists every field."""

from __future__ import annotations

import json
import os
import types
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from chat_shell import DEFAULT_ARCHIVE_LIMITS as _ARCHIVE
from chat_shell import EgressPolicy

ENV_PREFIX = "SKILLHIVE_"

MiB = 1024 * 1024

# Variables with our prefix that are read by something other than the server's Settings:
# the CLI client (`skillhive skills push`) and the test suite. Not reported as unknown.
NON_SERVER_VARIABLES = frozenset(
    {"SKILLHIVE_URL", "SKILLHIVE_TOKEN", "SKILLHIVE_TEST_POSTGRES_URL", "SKILLHIVE_TEST_REDIS_URL"}
    | {"SKILLHIVE_NAMESPACE"}  # the CLI client's default namespace (backend.client.config)
    | {"SKILLHIVE_CORPUS_DIR", "SKILLHIVE_REQUIRE_CORPUS"}
    | {"SKILLHIVE_REQUIRE_SANDBOX"}
    | {"SKILLHIVE_REQUIRE_BROWSER", "SKILLHIVE_TEST_ARTIFACTS"}  # the console's browser tests
    | {"SKILLHIVE_TEST_WORKERS"}  # ./scripts/test: pytest-xdist worker processes
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
    log_levels: dict[str, Literal["DEBUG", "INFO", "WARNING", "ERROR"]] = Field(
        default_factory=dict,
        description="JSON map logger -> level; other libraries' loggers stay at WARNING "
        "(they may log secrets or message content).",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins allowed to open Socket.IO connections (JSON list); "
        "empty: same origin only.",
    )
    socket_events_per_second: float = Field(
        20.0,
        gt=0,
        description="Events one user's Socket.IO sockets on a gateway may send per second "
        "together (sustained).",
    )
    socket_event_burst: int = Field(
        40,
        ge=1,
        description="Events one user's sockets on a gateway may send at once before the rate "
        "applies.",
    )
    socket_connections_per_user: int = Field(
        16,
        ge=1,
        description="Socket.IO connections one user may hold open on one gateway; more are "
        "refused with too_many_connections.",
    )
    socket_auth_recheck_seconds: float = Field(
        1.0,
        ge=0,
        description="An open socket's token is checked against the database again on its "
        "next event after this long (0: every event).",
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
    database_pool_size: int = Field(
        10, ge=1, description="Database connections per process (plus as many overflow)."
    )
    database_auth_pool_size: int = Field(
        10,
        ge=1,
        description="Database connections per process for authentication alone (one read per "
        "request), so it never waits behind turns and uploads holding the main pool.",
    )
    database_pool_timeout: float = Field(
        10.0,
        gt=0,
        description="Seconds a request waits for a pooled connection before it is answered "
        "503 `dependency_unavailable` with `Retry-After`.",
    )
    database_busy_timeout: float = Field(
        30.0,
        gt=0,
        description="SQLite: seconds a write waits for the database's write lock before it is "
        "answered 503 `dependency_unavailable` with `Retry-After`.",
    )
    retry_after_seconds: int = Field(
        2,
        ge=1,
        description="`Retry-After` of 503 `dependency_unavailable` and 429 `too_many_turns`.",
    )

    # --- auth ----------------------------------------------------------------------------
    bootstrap_admin_token: SecretStr | None = Field(
        None,
        description="If set and no admin exists at start-up, create user `admin` with this token.",
    )

    # --- skill package limits (docs/architecture.md) ------------------------------------
    # The package reader's defaults (chat_shell/packages/limits.py) are these settings' defaults.
    max_archive_bytes: int = Field(
        _ARCHIVE.max_archive_bytes, ge=1, description="Compressed upload size cap."
    )
    max_archive_entries: int = Field(
        _ARCHIVE.max_archive_entries, ge=1, description="Entries per archive."
    )
    max_uncompressed_bytes: int = Field(
        _ARCHIVE.max_uncompressed_bytes, ge=1, description="Sum of entry sizes."
    )
    max_compression_ratio: float = Field(
        _ARCHIVE.max_compression_ratio, gt=1, description="Per-entry ratio cap."
    )
    compression_ratio_min_bytes: int = Field(
        _ARCHIVE.compression_ratio_min_bytes,
        ge=0,
        description="The ratio cap applies to entries larger than this.",
    )
    max_skill_md_bytes: int = Field(1 * MiB, ge=1, description="SKILL.md size cap.")
    max_json_body_bytes: int = Field(
        1 * MiB, ge=1, description="Body cap of JSON routes (uploads and /apply have their own)."
    )
    builtin_skills_dir: Path | None = Field(
        None, description="Folder of built-in public skills; unset: `skills/` of the install."
    )
    console_dir: Path | None = Field(
        None,
        description="The web console's folder (index.html, src/, node_modules/); unset: "
        "`console/` of the install.",
    )
    skill_versions_retain: int = Field(
        20, ge=1, description="Package versions kept per skill (Ghost-pinned ones always)."
    )
    import_max_download_bytes: int = Field(
        64 * MiB, ge=1, description="Skill imports from a URL: bytes downloaded (archive or git)."
    )
    import_max_unpacked_bytes: int = Field(
        256 * MiB, ge=1, description="Skill imports from a URL: sum of the unpacked files."
    )
    import_max_files: int = Field(
        1000, ge=1, description="Skill imports from a URL: files in the archive or git tree."
    )
    import_timeout_seconds: float = Field(
        60.0, gt=0, description="Skill imports from a URL: time for the whole fetch."
    )
    import_concurrency: int = Field(
        2,
        ge=1,
        description="Imports (URL imports, syncs, plugin archives) one process runs at once; "
        "each holds up to `import_max_unpacked_bytes` in memory.",
    )

    # --- chat ----------------------------------------------------------------------------
    max_concurrent_turns_per_user: int = Field(
        8,
        ge=1,
        description="Turns one user may have running at once across the cluster; one more "
        "send is answered 429 `too_many_turns` with `Retry-After`.",
    )
    model: str = Field(
        "offline", description="Default model: `offline` (no network) or a model name."
    )
    openai_base_url: str | None = Field(None, description="OpenAI-compatible endpoint.")
    openai_api_key: SecretStr | None = Field(None, description="Key for that endpoint.")
    allowed_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Model names a Ghost may ask of the server's endpoint and key "
        "(comma-separated or JSON list); empty: `model` only.",
    )
    model_max_tokens: int = Field(
        4096, ge=1, description="`maxTokens` ceiling of Ghosts on the server's endpoint and key."
    )
    egress_allow: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="CIDRs and host names tenant-chosen endpoints may reach although the "
        "default egress rules refuse them (comma-separated or JSON list).",
    )
    egress_deny: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="CIDRs and host names tenant-chosen endpoints may never reach; wins over "
        "`egress_allow`.",
    )
    mcp_servers: dict[str, Any] = Field(
        default_factory=dict, description="Global MCP servers (JSON), trusted (stdio allowed)."
    )
    embedded_turn_concurrency: int = Field(
        16,
        ge=1,
        le=1000,
        description="Turns the gateway runs at once in embedded mode (no Redis); more wait "
        "for a slot, holding no database connection.",
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
    worker_user_slots: int = Field(
        4,
        ge=1,
        le=1000,
        description="Turns of one user a `skillhive worker` runs at once; the user's further "
        "turns wait in the worker while other users' turns take the free slots.",
    )
    history_messages: int = Field(
        100, ge=1, le=10_000, description="The newest messages of a conversation a turn sees."
    )
    retention_turns: int = Field(
        5,
        ge=0,
        description="User turns a loaded skill stays in context after its last use; a Ghost's "
        "`retentionTurns` overrides it.",
    )
    loaded_skills_token_budget: int = Field(
        8000, ge=1, description="Tokens the instructions of loaded skills may take in a prompt."
    )
    recursion_limit: int = Field(
        50, ge=2, le=1000, description="Agent steps (model and tool calls) one turn may take."
    )
    mcp_connect_timeout_s: float = Field(
        30.0,
        gt=0,
        description="Seconds an MCP server may take to connect (unless its config says).",
    )
    mcp_call_timeout_s: float = Field(60.0, gt=0, description="Seconds one MCP tool call may take.")
    turn_lock_ttl_s: int = Field(
        120,
        ge=5,
        description="Seconds a conversation's claim outlives its last renewal (Redis mode); "
        "workers renew it while the turn runs.",
    )
    worker_drain_s: float = Field(
        30.0,
        ge=0,
        description="On SIGTERM a worker lets running turns finish this long; the rest are "
        "reclaimed by another worker.",
    )
    redis_prefix: str = Field(
        "skillhive:",
        min_length=1,
        max_length=64,
        description="Prefix of the turn pipeline's Redis keys and channels (stream, claims, "
        "leases, events, pending browser requests, admission, quota counters, auth notices).",
    )
    turn_deadline_s: float = Field(
        300.0, gt=0, description="A turn running longer ends with `turn_timeout` (stored)."
    )
    model_timeout_s: float = Field(
        600.0, gt=0, description="Seconds the model client waits for one model call."
    )
    model_max_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="Retries of a failed call to the server's model endpoint (tenant "
        "endpoints are never retried).",
    )
    package_cache_bytes: int = Field(
        64 * MiB, ge=0, description="Memory for skill packages cached by hash (tool providers)."
    )
    skill_file_read_bytes: int = Field(
        32 * 1024, ge=1, description="Most bytes of a skill file one read_skill_file call returns."
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
    embeddings_url: str | None = Field(
        None,
        description="OpenAI-compatible embeddings endpoint (base URL, `/embeddings` is "
        "appended) that re-ranks skill search's best lexical matches; unset: lexical ranking "
        "only. Reached through the egress policy.",
    )
    embeddings_model: str = Field(
        "text-embedding-3-small", description="Model asked of the embeddings endpoint."
    )
    embeddings_api_key: SecretStr | None = Field(None, description="Key for that endpoint.")
    embeddings_candidates: int = Field(
        20, ge=1, le=100, description="Best lexical matches a search re-ranks semantically."
    )
    embeddings_timeout_s: float = Field(
        5.0,
        gt=0,
        description="Time an embeddings request may take; past it the lexical ranking stands.",
    )
    embeddings_cache_entries: int = Field(
        20000, ge=1, description="Embeddings of skill texts kept in memory per process."
    )
    secrets_key: SecretStr | None = Field(
        None, description="Fernet key encrypting user secrets at rest."
    )

    # --- sandbox (skill scripts; see docs/configuration.md) ----------------------------------
    sandbox_user_skills: bool = Field(
        False, description="Let scripts of users' own skills run in the sandbox too."
    )
    sandbox_run_uid: int | None = Field(
        None,
        ge=1,
        le=2**32 - 2,
        description="Host uid and gid sandbox runs execute as when the service is root (default "
        "65534, `nobody`). A number no other host process uses keeps every other process out of "
        "what the host hands runs (code mode's bridge socket).",
    )
    sandbox_wall_seconds: float = Field(30.0, gt=0, description="Wall time of one sandbox run.")
    sandbox_cpu_seconds: int = Field(30, ge=1, description="CPU seconds per sandbox process.")
    sandbox_memory_bytes: int = Field(
        1024 * MiB, ge=16 * MiB, description="Address space per sandbox process."
    )
    sandbox_processes: int = Field(64, ge=2, description="Processes at once in one run.")
    sandbox_open_files: int = Field(256, ge=16, description="Open files per sandbox process.")
    sandbox_output_bytes: int = Field(
        1 * MiB, ge=1024, description="Cap on stdout and on stderr of a run; past it, killed."
    )
    sandbox_workspace_bytes: int = Field(
        64 * MiB, ge=1 * MiB, description="Size of a run's workspace (and of its /tmp)."
    )
    sandbox_skill_cache_bytes: int = Field(
        1024 * MiB,
        ge=1 * MiB,
        description="Skill files kept on a worker's disk for its runs; past it, the least "
        "recently used versions no run holds are removed (and written again when next run).",
    )
    sandbox_workspace_scope: Literal["turn", "conversation"] = Field(
        "turn",
        description="How long a workspace lasts: one turn, or the conversation (kept in the "
        "database between turns, so any worker can go on with it).",
    )
    sandbox_workspace_ttl_seconds: int = Field(
        7 * 24 * 3600, ge=60, description="A kept conversation workspace unused this long is gone."
    )
    artifact_max_bytes: int = Field(
        16 * MiB, ge=1024, description="Largest output file kept as a conversation artifact."
    )
    artifacts_per_turn: int = Field(
        20, ge=1, description="Output files one turn may keep as artifacts."
    )
    artifact_turn_bytes: int = Field(
        64 * MiB, ge=1024, description="Bytes of artifacts one turn may keep."
    )
    conversation_file_max_bytes: int = Field(
        10 * MiB, ge=1024, description="Largest file a user may upload into a conversation."
    )
    conversation_files_bytes: int = Field(
        32 * MiB, ge=1024, description="Bytes of uploaded files one conversation may hold."
    )
    # --- MCP code mode and skill plans (issue 13) ---------------------------------------------
    mcp_code_call_timeout_seconds: float = Field(
        30.0, gt=0, description="Time one MCP call from sandboxed code (execute_code) may take."
    )
    mcp_code_call_budget: int = Field(
        50, ge=1, description="MCP calls one execute_code run may make."
    )
    skill_plan_max_steps: int = Field(
        3, ge=1, le=50, description="Steps a skill plan keeps (model plans are cut to it)."
    )
    skill_plan_execution: bool = Field(
        False,
        description="Allow executing skill plans (also needs allowPlanExecution on the Ghost).",
    )

    # --- operations: metrics, traces, quotas (backend/ops/) --------------------------------
    metrics: bool = Field(True, description="Record Prometheus metrics (and serve them).")
    metrics_token: SecretStr | None = Field(
        None,
        description="Bearer token Prometheus may send to `GET /metrics` (admins' API tokens "
        "work too).",
    )
    metrics_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Serve the gateway's metrics on this port of `metrics_host`, without auth, "
        "instead of `GET /metrics` on the API.",
    )
    metrics_host: str = Field(
        "127.0.0.1", description="Address of the metrics ports (`metrics_port`, worker's)."
    )
    worker_metrics_port: int | None = Field(
        None, ge=1, le=65535, description="Port of a `skillhive worker`'s own metrics endpoint."
    )
    tracing: bool = Field(
        False,
        description="Export OpenTelemetry traces over OTLP (the standard `OTEL_EXPORTER_OTLP_*` "
        "variables configure it; setting `OTEL_EXPORTER_OTLP_ENDPOINT` also turns it on).",
    )
    quota_tokens_per_day: int | None = Field(
        None, ge=0, description="Model tokens a user may spend per UTC day; unset: no limit."
    )
    quota_turns_per_minute: int | None = Field(
        None, ge=0, description="Turns a user may start per minute; unset: no limit."
    )
    quota_skill_bytes: int | None = Field(
        None, ge=0, description="Bytes of skill packages a user may store; unset: no limit."
    )
    quota_skills: int | None = Field(None, ge=0, description="Skills per user; unset: no limit.")
    quota_ghosts: int | None = Field(None, ge=0, description="Ghosts per user; unset: no limit.")
    quota_conversations: int | None = Field(
        None, ge=0, description="Conversations per user; unset: no limit."
    )

    @field_validator("allowed_models", "egress_allow", "egress_deny", mode="before")
    @classmethod
    def _split_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [item.strip() for item in text.split(",") if item.strip()]
        return value

    @field_validator("egress_allow", "egress_deny")
    @classmethod
    def _check_egress_entries(cls, entries: list[str]) -> list[str]:
        try:
            EgressPolicy(allow=tuple(entries))
        except ValidationError as exc:
            message = exc.errors(include_url=False)[0]["msg"]
            raise ValueError(message.removeprefix("Value error, ")) from None
        return entries

    @property
    def egress(self) -> EgressPolicy:
        """The egress policy of tenant-chosen endpoints (`chat_shell.net`)."""
        return _egress_policy(tuple(self.egress_allow), tuple(self.egress_deny))

    @field_validator("*", mode="before")
    @classmethod
    def _empty_means_unset(cls, value: Any, info: ValidationInfo) -> Any:
        """An optional setting given as "" (compose's `${VAR:-}`, `VAR=` in a file) is unset:
        an empty URL, key or path has no other sensible meaning."""
        if isinstance(value, str) and not value.strip() and _is_optional(info.field_name):
            return None
        return value

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'skillhive.db').resolve()}"


@lru_cache(maxsize=32)
def _egress_policy(allow: tuple[str, ...], deny: tuple[str, ...]) -> EgressPolicy:
    """One policy per entry list (it is immutable): parsing the entries cost every turn."""
    return EgressPolicy(allow=allow, deny=deny)


def _is_optional(field_name: str | None) -> bool:
    field = Settings.model_fields.get(field_name or "")
    annotation = field.annotation if field is not None else None
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


def unknown_env_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """`SKILLHIVE_*` variables that match no setting: most likely typos, reported at start-up."""
    env = os.environ if environ is None else environ
    known = {ENV_PREFIX + name.upper() for name in Settings.model_fields} | NON_SERVER_VARIABLES
    return sorted(k for k in env if k.upper().startswith(ENV_PREFIX) and k.upper() not in known)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
