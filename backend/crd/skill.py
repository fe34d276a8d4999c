"""The Skill CRD: the one definition of what Skillhive stores about a skill package.

`SkillSpec` doubles as the validator of SKILL.md frontmatter (backend/skills/fields.py feeds it
the frontmatter keys), so a field's type is written down once. Frontmatter spells one key
differently from the wire: `allowed-tools` (Agent Skills) is `allowedTools` here.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AliasChoices,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from backend.crd.common import API_VERSION, CamelModel, SkillMeta

SKILL_KIND: Final = "Skill"


def _scalar_text(value: object) -> object:
    """YAML turns `1.0`, `yes` and `300` into numbers and booleans; string fields want text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


Text = Annotated[str, BeforeValidator(_scalar_text)]

# A tool pattern may contain spaces inside parentheses: `Bash(git add:*) Read`.
_TOOL_PATTERN = re.compile(r"(?:[^\s(]|\([^)]*\)|\()+")


def _split_tools(value: object) -> object:
    return _TOOL_PATTERN.findall(value) if isinstance(value, str) else value


class SkillTool(CamelModel):
    """A tool as a Skill CRD declares it (provider optional). The engine's counterpart is
    `chat_shell.ToolDeclaration` (provider resolved), built by `skill_spec()` in builder.py."""

    name: Text
    provider: Text | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class SkillProvider(CamelModel):
    """Python tool provider, loaded only for public skills (docs/architecture.md)."""

    module: Text
    class_: Text = Field(alias="class")


class McpServer(CamelModel):
    """One MCP server as stored in a CRD. `${{...}}` placeholders stay verbatim; other keys (env,
    cwd) are kept. The engine's parsed, trust-marked form is `chat_shell.McpServerConfig`."""

    model_config = ConfigDict(extra="allow")

    type: Text | None = None
    transport: Text | None = None
    url: Text | None = None
    command: Text | None = None
    args: list[Text] | None = None
    headers: dict[str, Text] | None = None
    timeout: float | None = Field(None, allow_inf_nan=False)  # seconds; JSON has no inf/nan

    @model_validator(mode="after")
    def _needs_an_endpoint(self) -> McpServer:
        if self.url is None and self.command is None:
            raise ValueError("an MCP server needs 'url' or 'command'")
        return self


# A turn connects to every server of its Ghost and loaded skills: 3,000 of them took one turn
# four minutes of connection attempts. Claude Code's busiest setups use a few dozen.
MAX_MCP_SERVERS = 32
McpServers = Annotated[dict[str, McpServer], Field(max_length=MAX_MCP_SERVERS)]


class SkillFile(CamelModel):
    path: str
    size: int


class SkillWarning(CamelModel):
    code: str
    message: str


class SkillSpec(CamelModel):
    """The stored spec of a Skill CRD (what users write: tags, bindShells, version, ...). Not the
    engine's `chat_shell.SkillSpec`, which is one skill as a turn sees it (name, prompt, tool
    wiring, package hash and files); `skill_spec()` in `backend/chat/builder.py` maps one onto
    the other."""

    description: Annotated[Text, StringConstraints(strip_whitespace=True, min_length=1)]
    display_name: Text | None = None
    prompt: str = ""
    version: Text | None = None
    author: Text | None = None
    tags: list[Text] = Field(default_factory=list)
    bind_shells: list[Text] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    tools: list[SkillTool] = Field(default_factory=list)
    provider: SkillProvider | None = None
    mcp_servers: McpServers = Field(default_factory=dict)
    license: Text | None = None
    compatibility: Text | None = None
    allowed_tools: Annotated[list[Text], BeforeValidator(_split_tools)] = Field(
        default_factory=list, validation_alias=AliasChoices("allowedTools", "allowed-tools")
    )
    metadata: dict[str, Text] = Field(default_factory=dict)
    files: list[SkillFile] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class SkillSource(CamelModel):
    """Where an imported skill came from (`POST .../skills/import`); sync fetches it again."""

    url: str
    ref: str | None = None
    commit: str | None = None  # the git commit imported; None for an archive
    path: str = ""  # the skill's folder in the repository or archive


class ArtifactSource(CamelModel):
    """A skill installed from a conversation's artifact (`POST .../skills/install`)."""

    type: Literal["artifact"]
    conversation: str
    artifact: str


class SkillStatus(CamelModel):
    sha256: str
    size: int
    public: bool
    code_allowed: bool
    warnings: list[SkillWarning] = Field(default_factory=list)
    enabled: bool = True
    # Where the package came from, when not a plain upload.
    source: SkillSource | ArtifactSource | None = None


class Skill(CamelModel):
    api_version: Literal["skillhive.io/v1"] = API_VERSION
    kind: Literal["Skill"] = SKILL_KIND
    metadata: SkillMeta
    spec: SkillSpec
    status: SkillStatus
