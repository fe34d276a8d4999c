"""The interface a skill's tool provider implements, and what its tools get to work with."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.tools import BaseTool

from chat_shell.ports import FrontendChannel
from chat_shell.tools.pending.base import PendingRequestRegistry
from chat_shell.tools.pending.errors import PendingRequestError


class FrontendUnavailable(PendingRequestError):
    """The turn runs without a pending-request registry, so no tool can wait for the browser."""

    code = "frontend_unavailable"


@dataclass(frozen=True)
class ProviderContext:
    """Per-turn facts and services for the tools of one skill.

    New services (like `pending_requests`) arrive as new fields with defaults, so existing
    providers keep working.
    """

    user_id: int
    conversation_id: str
    skill_name: str
    frontend: FrontendChannel
    # The skill package's files by path relative to its root (empty for built-in providers).
    files: Mapping[str, bytes] = field(default_factory=dict)
    # Where tools wait for the browser's answers; None when the host runs turns without one.
    pending_requests: PendingRequestRegistry | None = None

    async def ask_frontend(self, action: str, payload: Any, timeout_s: float) -> Any:
        """Send `skill:request` (this skill, `action`, `payload`) and return the browser's result.

        Raises `RequestTimeout`, `FrontendError`, or `FrontendUnavailable` when the host gave
        this turn no registry: all `PendingRequestError`s, which a tool turns into text.
        """
        if self.pending_requests is None:
            raise FrontendUnavailable(
                f"skill {self.skill_name!r} needs the browser ({action}), but this chat runs "
                "without a pending-request registry",
                details={"skill": self.skill_name, "action": action},
            )
        return await self.pending_requests.request(
            self.user_id, self.conversation_id, self.skill_name, action, payload, timeout_s
        )

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
