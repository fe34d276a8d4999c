"""The sandbox port: what a run asks for, what it returns, and the Protocol an engine implements.

Engines (bubblewrap today) live next to this module; callers depend only on these names, so
another engine can be added without touching the tools that run code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from chat_shell.errors import ChatShellError

if TYPE_CHECKING:
    from chat_shell.sandbox.workspace import Workspace

MiB = 1024 * 1024

# Fixed paths inside the sandbox; the environment variables of a run point at them.
SKILL_DIR = "/skill"
WORKSPACE_DIR = "/workspace"
OUTPUT_DIR = "/workspace/out"

# Reasons a run was stopped or constrained, as reported in `SandboxResult.limits_hit`.
LIMIT_WALL_TIME = "wall_time"
LIMIT_CPU = "cpu"
LIMIT_OUTPUT = "output"
LIMIT_WORKSPACE = "workspace"


class SandboxUnavailable(ChatShellError):
    """No working sandbox engine on this host; the reason says why (e.g. bwrap missing)."""

    code = "sandbox_unavailable"


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. Memory is the address space of each process; processes count per run."""

    wall_seconds: float = 30.0
    cpu_seconds: int = 30
    memory_bytes: int = 1024 * MiB
    processes: int = 64
    open_files: int = 256
    output_bytes: int = 1 * MiB
    workspace_bytes: int = 64 * MiB  # also the size of the run's /tmp and /dev/shm

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value <= 0:
                raise ValueError(f"sandbox limit {name} must be positive, got {value!r}")


@dataclass(frozen=True)
class SandboxAvailability:
    """Whether runs can happen here, why not when they cannot, and what they can run."""

    available: bool
    engine: str
    reason: str | None = None
    version: str | None = None
    interpreters: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "engine": self.engine,
            "reason": self.reason,
            "version": self.version,
            "interpreters": list(self.interpreters),
        }


@dataclass(frozen=True)
class SandboxRun:
    """One shell command to run.

    `skill_dir` is a host directory mounted read-only at `SKILL_DIR` (none: no skill files).
    `workspace` is the host-side state of `WORKSPACE_DIR`; a run that ends by itself saves its
    changes back into it, a run stopped by a limit leaves it as it was.
    `mounts` are further host directories mounted read-only (host path, absolute sandbox path
    outside the workspace), e.g. the folder holding the MCP bridge's Unix socket; `env` adds
    variables to the run's environment (the engine's own names win).
    """

    command: str
    workspace: Workspace
    skill_dir: Path | None = None
    limits: SandboxLimits | None = None  # None: the engine's own limits
    mounts: tuple[tuple[Path, str], ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SandboxResult:
    """What a run did. `exit_code` is negative (minus the signal) when the sandbox was killed."""

    exit_code: int
    timed_out: bool
    duration_ms: int
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    limits_hit: tuple[str, ...] = ()
    workspace_saved: bool = True


class Sandbox(Protocol):
    """Runs untrusted shell commands isolated from the host, within limits."""

    limits: SandboxLimits  # what a run gets unless its request says otherwise

    def new_workspace(self) -> Workspace:
        """A fresh, empty workspace; the caller closes it."""
        ...

    def skill_dir(
        self, key: str, files: Callable[[], Awaitable[Mapping[str, bytes]]]
    ) -> AbstractAsyncContextManager[Path]:
        """A host folder with a package's files for `SandboxRun.skill_dir`, written once per
        `key` (its content hash) from `files()` and shared by later runs; it stays on disk while
        the context is open (hold it for the run), and may be removed after."""
        ...

    def give(self, path: Path) -> None:
        """Make `path`, a folder or socket the host made for a run, usable by the sandbox's
        processes and no other local user (but root): when runs execute as another host user,
        its group with modes 0750 (a folder) or 0660, the host keeping ownership (a run cannot
        change what is in the folder); else 0700 or 0600."""
        ...

    async def availability(self) -> SandboxAvailability:
        """Probe once (cached): is the engine present and does a trivial run work?"""
        ...

    async def run(self, request: SandboxRun) -> SandboxResult:
        """Run `request.command`; raise `SandboxUnavailable` when the engine cannot run."""
        ...
