"""The Ghost CRD: an agent definition (system prompt, skills, preloads, MCP servers, model).

Wire shape per issue 5: `spec.preload_skills` keeps its snake_case spelling (`preloadSkills` is
accepted on input too); every other key is camelCase.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field

from backend.crd.common import API_VERSION, CamelModel, ObjectMeta, ResourceName
from backend.crd.skill import McpServer

GHOST_KIND: Literal["Ghost"] = "Ghost"


class GhostModel(CamelModel):
    """Model settings; unset fields fall back to the server default (SKILLHIVE_MODEL, ...)."""

    name: str | None = Field(None, min_length=1, max_length=200)
    base_url: str | None = Field(None, max_length=2000)
    api_key_secret: str | None = Field(None, max_length=128)  # the name of a user secret
    temperature: float | None = Field(None, ge=0, le=2)
    max_tokens: int | None = Field(None, gt=0)


class GhostSpec(CamelModel):
    system_prompt: str = Field("", max_length=100_000)
    skills: list[ResourceName] = Field(default_factory=list, max_length=500)
    preload_skills: list[ResourceName] = Field(
        default_factory=list,
        validation_alias=AliasChoices("preload_skills", "preloadSkills"),
        serialization_alias="preload_skills",
    )
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    model: GhostModel = Field(default_factory=GhostModel)
    retention_turns: int | None = Field(None, ge=0, le=100)


class Ghost(CamelModel):
    api_version: Literal["skillhive.io/v1"] = API_VERSION
    kind: Literal["Ghost"] = GHOST_KIND
    metadata: ObjectMeta
    spec: GhostSpec
