"""Skill files on the host, one read-only folder per package version, shared by every run.

A package is written out once (keyed by its content hash) and mounted read-only at `SKILL_DIR`
by every run of that version: nothing a run does can change it. Folders live as long as the
engine; their number is bounded by the skill versions that ran in this process.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from chat_shell.sandbox.workspace import DIR_MODE, write_tree

_KEY = re.compile(r"^[0-9A-Za-z_-]{1,128}$")

Files = Callable[[], Awaitable[Mapping[str, bytes]]]


class SkillDirs:
    def __init__(self, root: Callable[[], Path]) -> None:
        self._root = root
        self._ready: dict[str, asyncio.Task[Path]] = {}

    async def get(self, key: str, files: Files) -> Path:
        """The folder of package `key` (e.g. its SHA-256), written from `files()` on first use.

        Concurrent callers share one write; a failed write is forgotten, so a later call retries.
        """
        if not _KEY.match(key):
            raise ValueError(f"invalid skill folder key {key!r}")
        task = self._ready.get(key)
        if task is None:
            task = self._ready[key] = asyncio.create_task(self._write(key, files))
            task.add_done_callback(lambda t: self._forget_failed(key, t))
        return await asyncio.shield(task)

    def _forget_failed(self, key: str, task: asyncio.Task[Path]) -> None:
        if task.cancelled() or task.exception() is not None:
            self._ready.pop(key, None)

    async def _write(self, key: str, files: Files) -> Path:
        contents = await files()
        parent = self._root() / "skills"
        parent.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(parent, DIR_MODE)
        final = parent / key
        if final.is_dir():
            return final
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=parent))
        try:
            await asyncio.to_thread(write_tree, staging / "skill", contents)
            (staging / "skill").rename(final)  # whole or not at all
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return final
