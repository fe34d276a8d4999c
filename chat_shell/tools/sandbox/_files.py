"""What `skill_run` keeps beyond a run, through its host: output files become conversation
artifacts, the user's uploaded files appear in the workspace, and (when the host keeps it) the
workspace itself lasts for the conversation.

chat_shell decides what is kept (the limits) and when; the host (`ConversationFiles`) stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

MiB = 1024 * 1024
INPUTS_DIR = "inputs"  # where uploaded files appear, relative to the workspace


@dataclass(frozen=True)
class ArtifactLimits:
    """What one turn may keep: each file up to `max_bytes`, at most `per_turn` files and
    `turn_bytes` bytes. Files over a limit are reported to the model, never silently dropped."""

    max_bytes: int = 16 * MiB
    per_turn: int = 20
    turn_bytes: int = 64 * MiB


@dataclass(frozen=True)
class NewArtifact:
    name: str  # the path below $OUTPUT_DIR, or below the workspace for a pattern's match
    mime_type: str
    data: bytes
    sha256: str


@dataclass(frozen=True)
class SavedArtifact:
    id: str
    name: str
    mime_type: str
    size: int
    sha256: str
    url: str  # where its owner downloads it


class ConversationFiles(Protocol):
    """A conversation's stored files, as one turn sees them."""

    @property
    def limits(self) -> ArtifactLimits: ...

    @property
    def keeps_workspace(self) -> bool:
        """Whether the workspace lasts for the conversation (restored, saved after runs)."""
        ...

    async def save_artifact(self, artifact: NewArtifact) -> SavedArtifact: ...

    async def inputs(self) -> Mapping[str, bytes]:
        """The user's uploaded files by (safe, flat) name."""
        ...

    async def load_workspace(self) -> bytes | None:
        """The kept workspace as a tar, or None (none yet, or expired)."""
        ...

    async def save_workspace(self, archive: bytes) -> None: ...
