"""The Plugin CRD: a Claude Code plugin as imported (its skills, commands and MCP servers).

A plugin owns Skill rows named `<plugin>/<skill>` (stored like any skill, so chat, search and
versions treat them alike) and keeps its commands, agents and hooks in its own spec. Agents and
hooks are kept for reference only: Skillhive never runs them (the import warns).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import ConfigDict, Field

from backend.crd.common import API_VERSION, CamelModel, ObjectMeta
from backend.crd.skill import McpServers, SkillWarning

PLUGIN_KIND: Final = "Plugin"


class PluginSkillRef(CamelModel):
    name: str = Field(description="the owned skill's name, `<plugin>/<skill>`")
    path: str = Field(description="its folder in the plugin")


class PluginCommand(CamelModel):
    """A slash command (`commands/<name>.md`): `prompt` is the body, with `$ARGUMENTS`, `$1`..."""

    name: str
    description: str = ""
    argument_hint: str | None = None
    prompt: str
    skills: list[str] = Field(default_factory=list, description="skills it loads (full names)")
    path: str


class PluginFile(CamelModel):
    """An agent or hook file, kept but never run."""

    path: str
    size: int
    content: str | None = None  # None when larger than the kept-text cap


class PluginSpec(CamelModel):
    model_config = ConfigDict(extra="allow")

    description: str = ""
    display_name: str | None = None
    version: str | None = None
    author: Any = None
    skills: list[PluginSkillRef] = Field(default_factory=list)
    commands: list[PluginCommand] = Field(default_factory=list)
    mcp_servers: McpServers = Field(default_factory=dict)
    secrets: list[str] = Field(default_factory=list, description="secrets its servers use")
    agents: list[PluginFile] = Field(default_factory=list)
    hooks: list[PluginFile] = Field(default_factory=list)
    source: dict[str, Any] = Field(default_factory=dict)


class PluginStatus(CamelModel):
    public: bool
    warnings: list[SkillWarning] = Field(default_factory=list)


class Plugin(CamelModel):
    api_version: Literal["skillhive.io/v1"] = API_VERSION
    kind: Literal["Plugin"] = PLUGIN_KIND
    metadata: ObjectMeta
    spec: PluginSpec
    status: PluginStatus
