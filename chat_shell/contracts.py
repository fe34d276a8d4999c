"""Wire models between backend and chat_shell: the turn request and the events of a turn.

backend maps its CRDs and rows onto these in one place; chat_shell never sees the database.
Events form a discriminated union on `type`. A turn yields `start` first and ends with exactly one
of `done` or `error`; `skill_error` and `mcp_error` are non-fatal reports in between (the turn goes
on without the failed provider or server).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, TypeAdapter

from chat_shell.net.egress import EgressPolicy
from chat_shell.tools.mcp import McpServerConfig


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ModelSettings(_Model):
    """Which LLM answers the turn. `name == "offline"` selects the built-in offline model.

    Resolved by the host: a real key, not a secret's name (the host's Ghost CRD says that)."""

    name: str = "offline"
    base_url: str | None = None
    api_key: SecretStr | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    # The operator's endpoint (or an admin's public Ghost): bypasses the egress policy. A
    # tenant-chosen `base_url` is reached only through `TurnRequest.egress`.
    trusted: bool = False
    # The client's wait for one model call, and retries on the trusted endpoint (a tenant's
    # endpoint is never retried). The host sets both from its settings.
    timeout_s: float = Field(default=600.0, gt=0)
    max_retries: int = Field(default=2, ge=0)


class ToolDeclaration(_Model):
    """A tool a skill declares; `provider` names the `SkillToolProvider` that creates it (always
    set here: the host fills in the default from its stored skill definition)."""

    name: str
    provider: str
    config: dict[str, Any] = Field(default_factory=dict)


class ProviderRef(_Model):
    """Where a public skill's package keeps its provider class (`module` relative to the root)."""

    module: str
    class_name: str = Field(alias="class")


class SkillFileInfo(_Model):
    """One file of a skill's package (path relative to its root), as the upload listed it."""

    path: str
    size: int = Field(ge=0)


class SkillSpec(_Model):
    """One skill as a turn sees it: metadata, instructions and tool wiring. The host stores more
    about a skill (labels, versions, shells); this is only what the engine needs."""

    name: str = Field(min_length=1)
    description: str = ""
    display_name: str | None = None
    prompt: str = ""
    tools: list[ToolDeclaration] = Field(default_factory=list)
    provider: ProviderRef | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    public: bool = False
    sha256: str | None = None
    # The package's files (SKILL.md included), listed in the loaded skill's block.
    files: list[SkillFileInfo] = Field(default_factory=list)
    # `allowed-tools`: patterns naming the skill's own tools that may be offered (None: all);
    # see chat_shell/skills/allowed.py.
    allowed_tools: list[str] | None = None


class CatalogEntry(_Model):
    """A skill as the catalog in the prompt lists it."""

    name: str = Field(min_length=1)
    description: str = ""
    public: bool = False  # an admin's skill: may run scripts in the sandbox by default


class SkillMatch(_Model):
    """One result of a skill search, best first: what `search_skills` shows the model."""

    name: str = Field(min_length=1)
    namespace: str = ""
    description: str = ""
    score: float = 0.0


class LoadedSkill(_Model):
    """A skill active at the end of a turn, persisted on the assistant message.

    `last_used_turn` is the 0-based index of the user turn that last loaded or used it; the list
    is ordered least recently used first, which is what restores LRU order on the next turn.
    """

    name: str
    last_used_turn: int = Field(ge=0)


class ToolCallRecord(_Model):
    """One tool call of a turn, as the UI shows it and history stores it."""

    id: str = ""
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    duration_ms: float = 0.0
    error: bool = False


class HistoryMessage(_Model):
    """A past message. Tool calls and `loaded_skills` are records, never replayed as text."""

    role: Literal["user", "assistant"]
    content: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    loaded_skills: list[LoadedSkill] | None = None


class UserRef(_Model):
    id: int | str
    name: str = ""


class SubstitutionContext(_Model):
    """Values for `${{dotted.path}}` placeholders in MCP configs.

    `values` holds further top-level keys (e.g. `backend_url`); `user`, `conversation` and
    `secrets` are filled in by chat_shell from this model and the request.
    """

    user: UserRef | None = None
    secrets: dict[str, SecretStr] = Field(default_factory=dict)
    values: dict[str, Any] = Field(default_factory=dict)


class TurnRequest(_Model):
    """Everything chat_shell needs to run one turn of a conversation."""

    conversation_id: str
    user_id: int
    system_prompt: str = ""
    model: ModelSettings = Field(default_factory=ModelSettings)
    # Skills defined in full up front: every skill of a small Ghost, or the ones a turn starts
    # with (preloaded, recently used). Others come from the host's `SkillDirectory` when loaded.
    skills: list[SkillSpec] = Field(default_factory=list)
    preload_skills: list[str] = Field(default_factory=list)
    # What the prompt's catalog lists; None lists `skills`. With `skill_search` the catalog is
    # only part of the Ghost's skills: the model gets `search_skills`, and `load_skill` takes
    # any name the directory knows instead of an enum of the catalog's names.
    catalog: list[CatalogEntry] | None = None
    skill_search: bool = False
    # Global and Ghost servers, already merged and trust-marked by the caller.
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    # How MCP tools reach the model: each as a tool (`direct`), or behind list_mcp_servers,
    # search_mcp_tools and execute_code (`code`; direct where the sandbox is missing).
    mcp_tool_mode: Literal["direct", "code"] = "direct"
    history: list[HistoryMessage] = Field(default_factory=list)
    user_message: str
    retention_turns: int = Field(default=5, ge=0)
    loaded_skills_token_budget: int = Field(default=8000, gt=0)
    recursion_limit: int = Field(default=50, ge=2)
    # MCP servers: how long one may take to connect (unless its config says), one tool call.
    mcp_connect_timeout_s: float = Field(default=30.0, gt=0)
    mcp_call_timeout_s: float = Field(default=60.0, gt=0)
    # The most bytes of a skill file one read_skill_file call returns.
    skill_file_read_bytes: int = Field(default=32 * 1024, gt=0)
    # The 0-based index of this user turn; None counts the user messages in `history`. Set it
    # when history is windowed, or retention would be computed from the window.
    turn_index: int | None = Field(default=None, ge=0)
    context: SubstitutionContext = Field(default_factory=SubstitutionContext)
    # Where tenant-chosen endpoints (untrusted model and MCP servers) may connect.
    egress: EgressPolicy = Field(default_factory=EgressPolicy)
    # Non-fatal problems the caller found while building the request (e.g. a preloaded skill
    # that is disabled, `skill_disabled`); yielded as they are right after `start`.
    notices: list[SkillErrorEvent] = Field(default_factory=list)


class Usage(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class StartEvent(_Model):
    type: Literal["start"] = "start"
    conversation_id: str
    turn_index: int


class TokenEvent(_Model):
    type: Literal["token"] = "token"
    delta: str


class ToolStartEvent(_Model):
    type: Literal["tool_start"] = "tool_start"
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolEndEvent(ToolCallRecord):
    type: Literal["tool_end"] = "tool_end"


class SkillLoadedEvent(_Model):
    type: Literal["skill_loaded"] = "skill_loaded"
    name: str


class SkillErrorEvent(_Model):
    """A skill, its provider or a tool could not be set up; the turn goes on without it."""

    type: Literal["skill_error"] = "skill_error"
    skill: str
    code: str
    message: str


class McpErrorEvent(_Model):
    """An MCP server could not be used this turn; the others keep working."""

    type: Literal["mcp_error"] = "mcp_error"
    server: str
    code: str = "mcp_error"
    message: str


class ArtifactEvent(_Model):
    """A file a tool run wrote was kept as a conversation artifact; `url` downloads it."""

    type: Literal["artifact"] = "artifact"
    id: str
    name: str
    mime_type: str
    size: int
    url: str


class McpCallEvent(_Model):
    """One MCP tool call made by code in the sandbox (`execute_code`): the audit trail."""

    type: Literal["mcp_call"] = "mcp_call"
    tool: str  # the tool's name in the turn
    server: str
    arguments: str  # a bounded summary of the arguments (JSON, cut)
    ok: bool
    code: str | None = None  # the error code when not ok
    duration_ms: float = 0.0


class UsageEvent(_Model):
    """Token usage of one model call."""

    type: Literal["usage"] = "usage"
    prompt_tokens: int
    completion_tokens: int
    # The provider reported no usage: these are the offline estimate (chat_shell.offline).
    estimated: bool = False


class DoneEvent(_Model):
    type: Literal["done"] = "done"
    text: str
    loaded_skills: list[LoadedSkill]
    usage: Usage
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)


class ErrorEvent(_Model):
    """The turn ended without an answer."""

    type: Literal["error"] = "error"
    code: str
    message: str


Event = Annotated[
    StartEvent
    | TokenEvent
    | ToolStartEvent
    | ToolEndEvent
    | SkillLoadedEvent
    | SkillErrorEvent
    | McpErrorEvent
    | ArtifactEvent
    | McpCallEvent
    | UsageEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
EventAdapter: TypeAdapter[Event] = TypeAdapter(Event)
TurnRequest.model_rebuild()  # `notices` refers to an event model defined below it
