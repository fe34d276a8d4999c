"""The sandbox of this process, built from settings, and how operators see its state."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from backend.config import Settings
from chat_shell import BubblewrapSandbox, SandboxAccess, SandboxLimits

log = logging.getLogger("skillhive.sandbox")

# /readyz answers quickly; a first probe still running is reported as such, not awaited.
STATUS_TIMEOUT_S = 2.0


def sandbox_limits(settings: Settings) -> SandboxLimits:
    return SandboxLimits(
        wall_seconds=settings.sandbox_wall_seconds,
        cpu_seconds=settings.sandbox_cpu_seconds,
        memory_bytes=settings.sandbox_memory_bytes,
        processes=settings.sandbox_processes,
        open_files=settings.sandbox_open_files,
        output_bytes=settings.sandbox_output_bytes,
        workspace_bytes=settings.sandbox_workspace_bytes,
    )


def sandbox_access(sandbox: BubblewrapSandbox, settings: Settings) -> SandboxAccess:
    """What turns get: the engine, and whether users' own skills may run in it."""
    return SandboxAccess(
        sandbox,
        user_skills=settings.sandbox_user_skills,
        mcp_call_timeout_s=settings.mcp_code_call_timeout_seconds,
        mcp_call_budget=settings.mcp_code_call_budget,
    )


def create_sandbox(settings: Settings) -> BubblewrapSandbox:
    """The engine; it probes `bwrap` on first use and makes its directory then."""
    return BubblewrapSandbox(
        sandbox_limits(settings),
        run_as=settings.sandbox_run_uid,
        skill_cache_bytes=settings.sandbox_skill_cache_bytes,
    )


async def sandbox_status(sandbox: BubblewrapSandbox, settings: Settings) -> dict[str, Any]:
    """Availability (and why not), what runs, and who may run: for /readyz and metrics."""
    try:
        found = await asyncio.wait_for(sandbox.availability(), STATUS_TIMEOUT_S)
    except TimeoutError:
        status: dict[str, Any] = {
            "available": False,
            "engine": "bubblewrap",
            "reason": "the availability probe is still running",
        }
    else:
        status = found.as_dict()
    status["user_skills"] = settings.sandbox_user_skills
    return status


async def log_sandbox(sandbox: BubblewrapSandbox) -> None:
    """Say at start-up whether this process can run skill scripts, and if not why."""
    found = await sandbox.availability()
    if found.available:
        log.info("sandbox: bubblewrap %s (%s)", found.version, ", ".join(found.interpreters))
    else:
        log.warning("sandbox unavailable, skill_run is not offered: %s", found.reason)
