"""The built-in frontend skills as a worker sees them, and a browser stand-in that answers them.

Packages are zipped and read exactly as the built-in sync stores them, then mapped to the
turn's `SkillSpec` by backend's one mapping, so the providers load through the real path.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from backend.chat.builder import skill_spec
from backend.skills.folder import zip_folder
from backend.skills.package import SkillPackage, read_package
from chat_shell.agent import run_turn
from chat_shell.contracts import Event, SkillSpec
from chat_shell.offline import ScriptedChatModel
from chat_shell.ports import FrontendMessage, InMemoryFrontendChannel, InMemoryPackageSource
from chat_shell.skills.registry import ProviderRegistry
from chat_shell.tools.pending_requests import InMemoryPendingRequestRegistry, Outcome
from tests.support.fakes import request

SKILLS_DIR = Path(__file__).resolve().parents[2] / "skills"
USER = 7  # the user of `fakes.request`
DEADLINE_S = 10.0  # bounds every wait; a healthy run takes milliseconds


@functools.cache
def builtin_package(name: str) -> tuple[bytes, SkillPackage]:
    data = zip_folder(SKILLS_DIR / name)
    return data, read_package(data, public=True, strict=True)


def builtin_spec(name: str, **tool_config: Any) -> SkillSpec:
    """The skill as a turn gets it; `tool_config` is merged into every tool's config."""
    _, package = builtin_package(name)
    spec = skill_spec(package.to_crd())
    tools = [t.model_copy(update={"config": {**t.config, **tool_config}}) for t in spec.tools]
    return spec.model_copy(update={"tools": tools})


@dataclass
class Browser:
    """The ports of one turn plus the user's browser, which answers `skill:request`s."""

    source: InMemoryPackageSource = field(default_factory=InMemoryPackageSource)
    channel: InMemoryFrontendChannel = field(default_factory=InMemoryFrontendChannel)
    providers: ProviderRegistry = field(default_factory=ProviderRegistry)
    registry: InMemoryPendingRequestRegistry = field(init=False)

    def __post_init__(self) -> None:
        self.registry = InMemoryPendingRequestRegistry(self.channel)
        for name in ("mermaid-diagram", "interactive-form"):
            self.source.add(builtin_package(name)[0])

    def start(
        self, model: ScriptedChatModel, skills: Sequence[SkillSpec], *, pending: bool = True
    ) -> asyncio.Task[list[Event]]:
        """Run the turn in the background, so the test can play the browser meanwhile."""

        async def run() -> list[Event]:
            events = run_turn(
                request(skills=list(skills)),
                package_source=self.source,
                frontend=self.channel,
                model=model,
                providers=self.providers,
                pending_requests=self.registry if pending else None,
            )
            return [event async for event in events]

        return asyncio.create_task(run())

    async def next_request(self, count: int = 1) -> FrontendMessage:
        async with asyncio.timeout(DEADLINE_S):
            return await self.channel.wait_for("skill:request", count=count)

    async def answer(
        self, count: int = 1, *, user_id: int = USER, **answer: Any
    ) -> tuple[FrontendMessage, Outcome]:
        """Answer the `count`-th request: `success=...`, `result=...` / `error=...`."""
        message = await self.next_request(count)
        outcome = await self.registry.resolve(user_id, message.data["request_id"], **answer)
        return message, outcome


async def finished(turn: asyncio.Task[list[Event]]) -> list[Event]:
    async with asyncio.timeout(DEADLINE_S):
        return await turn


def tool_results(model: ScriptedChatModel) -> list[ToolMessage]:
    """The tool messages the model saw on its last call, in order."""
    return [m for m in model.calls[-1].messages if isinstance(m, ToolMessage)]
