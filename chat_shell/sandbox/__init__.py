"""Running untrusted code: the `Sandbox` port and its bubblewrap engine."""

from chat_shell.sandbox._bubblewrap import BubblewrapSandbox
from chat_shell.sandbox._port import (
    OUTPUT_DIR,
    SKILL_DIR,
    WORKSPACE_DIR,
    Sandbox,
    SandboxAvailability,
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
)
from chat_shell.sandbox._threads import run_to_end
from chat_shell.sandbox.workspace import Workspace

__all__ = [
    "OUTPUT_DIR",
    "SKILL_DIR",
    "WORKSPACE_DIR",
    "BubblewrapSandbox",
    "Sandbox",
    "SandboxAvailability",
    "SandboxLimits",
    "SandboxResult",
    "SandboxRun",
    "SandboxUnavailable",
    "Workspace",
    "run_to_end",
]
