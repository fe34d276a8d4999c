"""Skill files on the host, one read-only folder per package version, shared by every run.

A package is written out once (keyed by its content hash) and mounted read-only at `SKILL_DIR`
by every run of that version: nothing a run does can change it. A run holds a lease on its
folder for as long as the folder is mounted; folders nobody holds are removed, least recently
used first, once all of them together pass the cache's size, so a long-lived worker that ran
thousands of skill versions keeps only what fits.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from chat_shell.sandbox.workspace import DIR_MODE, write_tree

_KEY = re.compile(r"^[0-9A-Za-z_-]{1,128}$")

DEFAULT_CACHE_BYTES = 1024 * 1024 * 1024

Files = Callable[[], Awaitable[Mapping[str, bytes]]]


@dataclass
class _Folder:
    task: asyncio.Task[tuple[Path, int]]
    leases: int = 0
    used: int = 0  # a tick of the cache's clock: larger is more recent


class SkillDirs:
    def __init__(self, root: Callable[[], Path], max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self._root = root
        self._max_bytes = max_bytes
        self._folders: dict[str, _Folder] = {}
        self._clock = itertools.count(1)
        self._trash = itertools.count()

    @asynccontextmanager
    async def lease(self, key: str, files: Files) -> AsyncIterator[Path]:
        """The folder of package `key` (e.g. its SHA-256), written from `files()` on first use
        and kept while the lease is held.

        Concurrent callers share one write; a failed write is forgotten, so a later call retries.
        """
        if not _KEY.match(key):
            raise ValueError(f"invalid skill folder key {key!r}")
        folder = self._folders.get(key)
        if folder is None:
            task = asyncio.create_task(self._write(key, files))
            folder = self._folders[key] = _Folder(task)
            task.add_done_callback(lambda t: self._forget_failed(key, t))
        folder.leases += 1
        folder.used = next(self._clock)
        try:
            path, _ = await asyncio.shield(folder.task)
            self._evict()  # a new folder may have pushed the cache past its size
            yield path
        finally:
            folder.leases -= 1
            folder.used = next(self._clock)
            self._evict()

    def cached_bytes(self) -> int:
        """Bytes of the folders written and still on disk."""
        return sum(size for _, size in self._written())

    def _written(self) -> list[tuple[str, int]]:
        return [
            (key, f.task.result()[1])
            for key, f in self._folders.items()
            if f.task.done() and not f.task.cancelled() and f.task.exception() is None
        ]

    def _forget_failed(self, key: str, task: asyncio.Task[tuple[Path, int]]) -> None:
        folder = self._folders.get(key)
        if folder is not None and folder.task is task:
            if task.cancelled() or task.exception() is not None:
                del self._folders[key]

    def _evict(self) -> None:
        """Remove idle folders, oldest use first, until the rest fit. A folder under lease is
        mounted in a run and stays, even past the size (bounded by the runs at once)."""
        written = dict(self._written())
        total = sum(written.values())
        idle = sorted(
            (f.used, key) for key, f in self._folders.items() if f.leases == 0 and key in written
        )
        for _, key in idle:
            if total <= self._max_bytes:
                return
            path, size = self._folders.pop(key).task.result()
            total -= size
            self._discard(path)

    def _discard(self, path: Path) -> None:
        """Out of the way at once (a rename), deleted off the event loop."""
        trash = path.with_name(f".trash-{os.getpid()}-{next(self._trash)}-{path.name}")
        try:
            path.rename(trash)
        except OSError:
            return  # already gone (the engine's directory was removed)
        # ignore_errors: nothing to report, so the future is not awaited
        asyncio.get_running_loop().run_in_executor(None, shutil.rmtree, trash, True)

    async def _write(self, key: str, files: Files) -> tuple[Path, int]:
        contents = await files()
        size = sum(len(data) for data in contents.values())
        parent = self._root() / "skills"
        parent.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(parent, DIR_MODE)
        final = parent / key
        if final.is_dir():
            return final, size
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=parent))
        try:
            await asyncio.to_thread(write_tree, staging / "skill", contents)
            (staging / "skill").rename(final)  # whole or not at all
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return final, size
