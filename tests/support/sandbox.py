"""Tests that need a working sandbox: skipped where bubblewrap cannot run, failed in CI."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chat_shell.sandbox import BubblewrapSandbox, SandboxAvailability, SandboxRun
from tests.support.wait import eventually

REQUIRE = "SKILLHIVE_REQUIRE_SANDBOX"


def require_sandbox(found: SandboxAvailability) -> None:
    """Skip (or fail, with SKILLHIVE_REQUIRE_SANDBOX=1) unless `found` says it works."""
    if found.available:
        return
    message = f"no working sandbox (Debian package `bubblewrap`): {found.reason}"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
async def sandbox() -> AsyncIterator[BubblewrapSandbox]:
    engine = BubblewrapSandbox()  # under the system temp dir, which `nobody` can reach
    found = await engine.availability()
    if not found.available:
        engine.close()
    require_sandbox(found)
    yield engine
    engine.close()


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker` (the test's own process excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def owner(pid: int) -> int:
    return Path(f"/proc/{pid}").stat().st_uid


async def owners_of_a_run(engine: BubblewrapSandbox) -> set[int]:
    """The host uids of a run's processes (the engine is closed after)."""
    if os.geteuid() != 0:
        engine.close()
        pytest.skip("the service does not run as root here: runs keep its user")
    found = await engine.availability()
    if not found.available:
        engine.close()
    require_sandbox(found)  # skipped where bubblewrap cannot run, as every sandbox test is
    own = engine.new_workspace()
    marker = f"sleep\0{secrets.randbelow(10**6) + 600}"
    task = asyncio.create_task(engine.run(SandboxRun(marker.replace("\0", " "), own)))

    async def sleeping() -> list[int]:
        return processes_with(marker)

    try:
        pids = await eventually(sleeping)
        return {owner(pid) for pid in pids}
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        own.close()
        engine.close()
