"""Host-side directories a sandbox sees: a run's workspace state and a skill's files.

Everything here treats sandbox-produced bytes as hostile: a workspace comes back from a run as a
tar stream and is unpacked with regular files and directories only (no links, devices or paths
leaving the directory), with every mode normalised so the next run can read it back. Nothing here
ever follows a symlink.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from chat_shell.sandbox._port import OUTPUT_DIR

# A workspace holding more entries than this is not saved (tar headers are 512 bytes each, so
# the cap also bounds the stream overhead beyond the workspace's byte size).
MAX_WORKSPACE_ENTRIES = 10_000

PAGE = 4096
OUTPUT_NAME = PurePosixPath(OUTPUT_DIR).name  # the output folder inside the workspace

DIR_MODE = 0o755
FILE_MODE = 0o644
EXEC_MODE = 0o755


class WorkspaceRejected(Exception):
    """A workspace archive broke the caps or the rules; the previous state stays."""


@dataclass(frozen=True)
class WorkspaceFile:
    path: str  # relative, POSIX separators
    size: int


def safe_relative_path(name: str) -> PurePosixPath | None:
    """`name` as a relative path with no `..`, absolute, empty or NUL parts; None if unsafe.

    A name that is not UTF-8 is unsafe too: tar and `os` keep such bytes as lone surrogates,
    which every later step (JSON results, artifact names, the database) fails to encode."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return None
    if not _is_utf8(name):
        return None
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if not parts or any(p == ".." for p in parts):
        return None
    return PurePosixPath(*parts)


def write_tree(dest: Path, files: Mapping[str, bytes]) -> None:
    """Write `files` (relative path -> bytes) under the new directory `dest`, readable by all.

    Every entry becomes a regular file: a symlink stored in a package arrives here as the bytes
    of its target, so it cannot point anywhere. Unsafe names are an error, not skipped.
    """
    dest.mkdir(mode=DIR_MODE)
    os.chmod(dest, DIR_MODE)
    for name, data in files.items():
        rel = safe_relative_path(name)
        if rel is None:
            raise ValueError(f"unsafe path in skill files: {name!r}")
        target = dest
        for part in rel.parts[:-1]:
            target = target / part
            try:
                target.mkdir(mode=DIR_MODE)
                os.chmod(target, DIR_MODE)
            except FileExistsError:
                if not stat.S_ISDIR(target.lstat().st_mode):
                    raise ValueError(f"path conflict in skill files: {name!r}") from None
        mode = EXEC_MODE if data.startswith(b"#!") else FILE_MODE
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(target / rel.parts[-1], flags, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(target / rel.parts[-1], mode)


class Workspace:
    """The saved state of `WORKSPACE_DIR` between runs (a turn, or a conversation).

    `path` is a directory on the host; an engine mounts it read-only and copies it into the
    sandbox's size-capped workspace, then hands the result back to `replace_from_tar`.
    """

    def __init__(self, root: Path) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="ws-", dir=root))
        os.chmod(self._root, DIR_MODE)
        self._generation = 0
        self.path = self._new_state_dir()

    def _new_state_dir(self) -> Path:
        self._generation += 1
        state = self._root / f"state-{self._generation}"
        state.mkdir(mode=DIR_MODE)
        os.chmod(state, DIR_MODE)
        return state

    @property
    def scratch_dir(self) -> Path:
        """A host directory for temporary files of this workspace (not visible to runs)."""
        return self._root

    def is_empty(self) -> bool:
        """Nothing to copy into a run: no entries, or only the empty output folder (every run
        gets a fresh one)."""
        with os.scandir(self.path) as listing:
            entries = list(listing)
        if not entries:
            return True
        only = entries[0]
        if len(entries) > 1 or only.name != OUTPUT_NAME or not only.is_dir(follow_symlinks=False):
            return False
        with os.scandir(only.path) as inside:
            return next(inside, None) is None

    def clear(self) -> None:
        """Make the state empty (a run left nothing in its workspace)."""
        if not self.is_empty():
            old, self.path = self.path, self._new_state_dir()
            shutil.rmtree(old, ignore_errors=True)

    def used_bytes(self) -> int:
        """What the files take on a tmpfs (whole pages), to tell a full workspace."""
        return sum(-(-f.size // PAGE) * PAGE for f in self.files())

    def replace_from_tar(self, archive: BinaryIO, *, max_bytes: int) -> None:
        """Make the tar read from `archive` (at its current position) the new state.

        Raise `WorkspaceRejected`, keeping the old state, if it has too many entries or bytes.
        Anything but regular files and directories is dropped."""
        new = self._new_state_dir()
        try:
            _extract(archive, new, max_bytes=max_bytes)
        except (WorkspaceRejected, tarfile.TarError, OSError) as exc:
            shutil.rmtree(new, ignore_errors=True)
            if isinstance(exc, WorkspaceRejected):
                raise
            raise WorkspaceRejected(f"unreadable workspace archive: {exc}") from exc
        old, self.path = self.path, new
        shutil.rmtree(old, ignore_errors=True)

    def files(self, under: str = "") -> Iterator[WorkspaceFile]:
        """Regular files of the current state (below `under`, if given), sorted, no symlinks."""
        start = self.path
        if under:
            rel = safe_relative_path(under)
            if rel is None:
                return
            start = self.path / rel
        yield from _walk(start, self.path)

    def read(self, relative: str, *, max_bytes: int) -> bytes:
        """Up to `max_bytes` of a regular file of the current state; never follows a symlink."""
        rel = safe_relative_path(relative)
        if rel is None:
            raise FileNotFoundError(relative)
        fd = os.open(self.path / rel, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise FileNotFoundError(relative)
            return handle.read(max_bytes)

    def put(self, relative: str, data: bytes) -> None:
        """Write one file into the current state (between runs), replacing a file there."""
        rel = safe_relative_path(relative)
        if rel is None:
            raise ValueError(f"unsafe workspace path: {relative!r}")
        target = self.path
        for part in rel.parts[:-1]:
            target = target / part
            if not target.is_dir() or target.is_symlink():
                if target.exists() or target.is_symlink():
                    target.unlink()
                target.mkdir(mode=DIR_MODE)
                os.chmod(target, DIR_MODE)
        final = target / rel.parts[-1]
        if final.is_symlink() or final.is_file():
            final.unlink()
        elif final.exists():
            shutil.rmtree(final)
        fd = os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(final, FILE_MODE)

    def to_tar(self, destination: BinaryIO) -> None:
        """Write the current state as a tar of regular files and directories (what
        `replace_from_tar` reads back)."""
        with tarfile.open(fileobj=destination, mode="w:") as tar:
            for found in self.files():
                tar.add(self.path / found.path, arcname=found.path, recursive=False)

    def close(self) -> None:
        shutil.rmtree(self._root, ignore_errors=True)


def _is_utf8(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _walk(directory: Path, base: Path) -> Iterator[WorkspaceFile]:
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if not _is_utf8(entry.name):
            continue  # never unpacked (`safe_relative_path`); a file put there by hand
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), base)
        elif entry.is_file(follow_symlinks=False):
            rel = Path(entry.path).relative_to(base).as_posix()
            yield WorkspaceFile(rel, entry.stat(follow_symlinks=False).st_size)


def _extract(archive: BinaryIO, dest: Path, *, max_bytes: int) -> None:
    with tarfile.open(fileobj=archive, mode="r:") as tar:
        members: list[tarfile.TarInfo] = []
        total = 0
        for member in tar:
            if len(members) >= MAX_WORKSPACE_ENTRIES:
                raise WorkspaceRejected(f"more than {MAX_WORKSPACE_ENTRIES} workspace entries")
            if not (member.isreg() or member.isdir()):
                continue  # links, devices, fifos: dropped, never recreated on the host
            rel = safe_relative_path(member.name)
            if rel is None:
                continue  # "." itself, a name the wrapper's tar never writes, or not UTF-8
            total += member.size
            if total > max_bytes:
                raise WorkspaceRejected(f"workspace larger than {max_bytes} bytes")
            if member.isdir():
                mode = DIR_MODE
            else:
                mode = EXEC_MODE if member.mode & 0o100 else FILE_MODE
            members.append(member.replace(name=str(rel), mode=mode, deep=False))
        tar.extractall(dest, members=members, filter="data")
