"""What chat_shell needs from its host, as Protocols, with in-memory implementations.

backend supplies the real ones (skill binaries from the database, Socket.IO rooms through Redis);
the in-memory ones serve the embedded default and the tests.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chat_shell.contracts import SkillMatch, SkillSpec
from chat_shell.errors import ProviderLoadError
from chat_shell.packages.limits import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits


class PackageSource(Protocol):
    """Skill package bytes by content hash, and the caps the host accepted them under: the
    engine reads them (`chat_shell.packages.open_package`) with the same caps."""

    @property
    def limits(self) -> ArchiveLimits: ...

    async def get(self, sha256: str) -> bytes:
        """Return the ZIP whose SHA-256 is `sha256`; raise `ProviderLoadError` if unknown."""
        ...


class SkillDirectory(Protocol):
    """The Ghost's skills beyond those a turn request carries: searched and fetched by name.

    backend answers with the same search its API serves, over the Ghost's selection only.
    """

    async def search(self, query: str, limit: int) -> list[SkillMatch]:
        """The skills that fit `query`, best first; empty when none fits well enough."""
        ...

    async def get(self, name: str) -> SkillSpec | None:
        """The full definition of the Ghost's skill `name`, or None if it has none by that name."""
        ...


class FrontendChannel(Protocol):
    """Sends events to the browser(s) showing a conversation (e.g. `skill:request`).

    Waiting for the browser's answer is the pending-request registry's job, not the channel's.
    """

    async def emit(self, conversation_id: str, event: str, data: Mapping[str, Any]) -> None: ...


class InMemoryPackageSource:
    """Packages held in a dict, keyed by their SHA-256."""

    def __init__(self, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> None:
        self.limits = limits
        self._packages: dict[str, bytes] = {}

    def add(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self._packages[digest] = data
        return digest

    async def get(self, sha256: str) -> bytes:
        try:
            return self._packages[sha256]
        except KeyError:
            raise ProviderLoadError(f"no skill package with sha256 {sha256}") from None


class InMemorySkillDirectory:
    """Skills held in a list; search ranks them by the request's words in name and description."""

    def __init__(self, skills: list[SkillSpec]) -> None:
        self._skills = {s.name: s for s in skills}

    async def search(self, query: str, limit: int) -> list[SkillMatch]:
        wanted = _words(query)
        scored = []
        for skill in self._skills.values():
            found = len(wanted & _words(f"{skill.name} {skill.description}"))
            if found:
                score = found / len(wanted)
                scored.append(
                    SkillMatch(name=skill.name, description=skill.description, score=score)
                )
        scored.sort(key=lambda m: (-m.score, m.name))
        return scored[:limit]

    async def get(self, name: str) -> SkillSpec | None:
        return self._skills.get(name)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


@dataclass(frozen=True)
class FrontendMessage:
    conversation_id: str
    event: str
    data: Mapping[str, Any]


class InMemoryFrontendChannel:
    """Records every emitted event; `wait_for` lets a test await one without sleeping."""

    def __init__(self) -> None:
        self.messages: list[FrontendMessage] = []
        self._changed = asyncio.Condition()

    async def emit(self, conversation_id: str, event: str, data: Mapping[str, Any]) -> None:
        async with self._changed:
            self.messages.append(FrontendMessage(conversation_id, event, dict(data)))
            self._changed.notify_all()

    async def wait_for(self, event: str, *, count: int = 1) -> FrontendMessage:
        """Return the `count`-th message named `event`, waiting for it (wrap in a timeout)."""

        def matching() -> list[FrontendMessage]:
            return [m for m in self.messages if m.event == event]

        async with self._changed:
            await self._changed.wait_for(lambda: len(matching()) >= count)
            return matching()[count - 1]
