"""Tests that need a working sandbox: skipped where bubblewrap cannot run, failed in CI."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chat_shell.sandbox import BubblewrapSandbox, SandboxAvailability

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
