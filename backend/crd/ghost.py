"""The Ghost CRD: an agent definition (system prompt, skills, preloads, MCP servers, model).

Every key is camelCase on the wire; snake_case (`preload_skills`, `system_prompt`, ...) is
accepted on input too. `status` is computed when a Ghost is served and ignored on input.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    AliasChoices,
    ConfigDict,
    Field,
    model_validator,
)

from backend.crd.common import (
    API_VERSION,
    CamelModel,
    LabelKey,
    LabelValue,
    ObjectMeta,
    PinnedSkillRef,
    ResourceName,
)
from backend.crd.skill import McpServers

GHOST_KIND: Literal["Ghost"] = "Ghost"

# Stored spec keys of an older spelling -> today's (rows written before issue 9).
LEGACY_SPEC_KEYS = {"preload_skills": "preloadSkills"}


class GhostModel(CamelModel):
    """Model settings as a Ghost CRD states them; unset fields fall back to the server default
    (SKILLHIVE_MODEL, ...). The key is a secret's name here; the engine's resolved form (key,
    trust, timeouts) is `chat_shell.ModelSettings`, made by `model_settings()` in builder.py."""

    name: str | None = Field(None, min_length=1, max_length=200)
    base_url: str | None = Field(None, max_length=2000)
    api_key_secret: str | None = Field(None, max_length=128)  # the name of a user secret
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, gt=0)


class LabelSelectorRequirement(CamelModel):
    key: LabelKey
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[LabelValue] = Field(default_factory=list, max_length=100)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self


class LabelSelector(CamelModel):
    """A Kubernetes label selector over the owner's skills; `{}` selects them all."""

    match_labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=50)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list, max_length=50)


class GhostSpec(CamelModel):
    system_prompt: str = Field("", max_length=100_000)
    # `name`, `plugin/skill`, either pinned to a package version as `name@3`
    # (backend/ghosts/pins.py); a pinned version is used by turns and never pruned.
    skills: list[PinnedSkillRef] = Field(default_factory=list, max_length=500)
    preload_skills: list[PinnedSkillRef] = Field(
        default_factory=list,
        validation_alias=AliasChoices("preloadSkills", "preload_skills"),
        description="loaded into the first turn's prompt; each must also be in `skills` "
        "(a version here, if any, must be the one `skills` pins)",
    )
    mcp_servers: McpServers = Field(default_factory=dict)
    model: GhostModel = Field(default_factory=GhostModel)
    retention_turns: int | None = Field(None, ge=0, le=100)
    # Skills chosen by label instead of by name (the 500-name cap is for `skills` only), and
    # public skills; see backend/skills/search/selection.py.
    skill_selector: LabelSelector | None = None
    include_public_skills: bool | None = None  # unset: false
    # Tokens the full skill catalog may take before the prompt switches to a compact catalog
    # and `search_skills`; unset: SKILLHIVE_CATALOG_BUDGET_TOKENS.
    catalog_budget_tokens: int | None = Field(None, ge=0, le=1_000_000)
    # How MCP tools reach the model: one tool each (`direct`, unset) or code mode (`code`:
    # list_mcp_servers, search_mcp_tools, execute_code in the sandbox).
    mcp_tool_mode: Literal["direct", "code"] | None = None
    # Skill plans may run through this Ghost's name (POST .../plan/execute), where the operator
    # allows it too (SKILLHIVE_SKILL_PLAN_EXECUTION). Unset: false.
    allow_plan_execution: bool | None = None
    # Plugins whose every skill and command the Ghost gets (own plugin, else the public one).
    # Unset (not `[]`) when absent, so Ghosts without plugins are stored as before.
    plugins: list[ResourceName] | None = Field(None, max_length=100)


class GhostWarning(CamelModel):
    model_config = ConfigDict(extra="ignore")  # status is read-only: what comes back is dropped

    code: str = Field(description="stable, e.g. `skill_disabled`")
    message: str
    skill: str | None = Field(None, description="the skill the warning is about")


class GhostStatus(CamelModel):
    """Computed when the Ghost is served (enabling a skill changes it); ignored on input."""

    model_config = ConfigDict(extra="ignore")

    warnings: list[GhostWarning] = Field(default_factory=list)


class Ghost(CamelModel):
    api_version: Literal["skillhive.io/v1"] = API_VERSION
    kind: Literal["Ghost"] = GHOST_KIND
    metadata: ObjectMeta
    spec: GhostSpec
    status: GhostStatus | None = None


def current_spelling(crd: dict[str, Any]) -> dict[str, Any]:
    """A stored Ghost CRD with today's key spelling (a copy when a key had to be renamed)."""
    spec = crd.get("spec")
    if not isinstance(spec, dict) or not LEGACY_SPEC_KEYS.keys() & spec.keys():
        return crd
    renamed = {LEGACY_SPEC_KEYS.get(key, key): value for key, value in spec.items()}
    return {**crd, "spec": renamed}
