"""A real bubblewrap sandbox for the tests, skipped (or failed, in CI) where it cannot run."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from chat_shell.sandbox import BubblewrapSandbox, Workspace


@pytest.fixture
def workspace(sandbox: BubblewrapSandbox) -> Iterator[Workspace]:
    ws = sandbox.new_workspace()
    yield ws
    ws.close()


@pytest.fixture
def skill_dir(sandbox: BubblewrapSandbox) -> Iterator[Path]:
    """Where a test writes a skill's files: a path the sandbox can mount (not created yet)."""
    parent = Path(tempfile.mkdtemp(prefix="skill-", dir=sandbox.state_dir))
    os.chmod(parent, 0o755)
    yield parent / "skill"
    shutil.rmtree(parent)
