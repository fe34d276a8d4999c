"""Tests that need a working sandbox: skipped where bubblewrap cannot run, failed in CI."""

from __future__ import annotations

import os

import pytest

from chat_shell.sandbox import SandboxAvailability

REQUIRE = "SKILLHIVE_REQUIRE_SANDBOX"


def require_sandbox(found: SandboxAvailability) -> None:
    """Skip (or fail, with SKILLHIVE_REQUIRE_SANDBOX=1) unless `found` says it works."""
    if found.available:
        return
    message = f"no working sandbox (Debian package `bubblewrap`): {found.reason}"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {message}")
    pytest.skip(message)
