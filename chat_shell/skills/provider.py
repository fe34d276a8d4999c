"""The interface a skill's tool provider implements, and what its tools get to work with."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.tools import BaseTool

from chat_shell.ports import FrontendChannel


@dataclass(frozen=True)
class ProviderContext:
    """Per-turn facts and services for the tools of one skill.

    New services (e.g. the pending-request registry of the scale-out issue) arrive as new fields
    with defaults, so existing providers keep working.
    """

    user_id: int
    conversation_id: str
    skill_name: str
    frontend: FrontendChannel
    # The skill package's files by path relative to its root (empty for built-in providers).
    files: Mapping[str, bytes] = field(default_factory=dict)

    async def emit_to_frontend(self, event: str, data: Mapping[str, Any]) -> None:
        """Send `event` to the browsers showing this conversation."""
        await self.frontend.emit(self.conversation_id, event, data)


class SkillToolProvider(ABC):
    """Creates the tools a skill declares. Subclasses set the two class attributes.

    A public skill's package ships one of these (`provider: {module, class}`); it is instantiated
    without arguments once per package hash and must therefore keep no per-turn state.
    """

    provider_name: ClassVar[str]
    supported_tools: ClassVar[Sequence[str]]

    @abstractmethod
    def create_tool(
        self, tool_name: str, context: ProviderContext, config: Mapping[str, Any]
    ) -> BaseTool:
        """Build `tool_name` for one turn; `config` is the skill config under the tool's own."""
