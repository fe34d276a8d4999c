"""Zipping a skill folder the same way every time (CLI push, built-in skills sync).

Same content gives the same bytes, so the SHA-256 tells whether a built-in skill changed:
entries are sorted, timestamps fixed, and modes normalized the way git stores them (0o755 if
any execute bit is set, else 0o644) so a checkout's umask does not change the hash. The folder
name is the archive's top-level folder, which names the skill if its frontmatter does not.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from pathlib import Path

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.limits import DEFAULT_LIMITS, ArchiveLimits

_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a ZIP can store
_SKIPPED_DIRS = frozenset({"__pycache__"})


def zip_folder(folder: Path, limits: ArchiveLimits = DEFAULT_LIMITS) -> bytes:
    """A deterministic ZIP of `folder` without dot-files and `__pycache__`. Symlinks and other
    files that are not regular (a FIFO would block the read forever) refuse, and so do more
    entries or bytes than `limits` allow an upload, before the rest is read."""
    buf = io.BytesIO()
    total = 0
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        files = _files(folder)
        if len(files) > limits.max_archive_entries:
            raise PackageError(
                ErrorCode.TOO_MANY_ENTRIES,
                f"{len(files)} files, more than {limits.max_archive_entries}",
            )
        for path in files:
            entry = path.relative_to(folder).as_posix()
            found = path.lstat()
            mode = found.st_mode
            if not stat.S_ISREG(mode):
                raise PackageError(
                    ErrorCode.NON_REGULAR_ENTRY, f"{entry!r} is not a regular file", entry=entry
                )
            total += found.st_size
            if total > limits.max_uncompressed_bytes:
                raise PackageError(
                    ErrorCode.UNCOMPRESSED_TOO_LARGE,
                    f"the files hold more than {limits.max_uncompressed_bytes} bytes",
                )
            info = zipfile.ZipInfo(f"{folder.name}/{entry}", _EPOCH)
            info.create_system = 3  # Unix, wherever this runs: external_attr holds a Unix mode
            info.external_attr = (stat.S_IFREG | _git_mode(mode)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def _files(folder: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        base = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in _SKIPPED_DIRS]
        for name in [*dirnames, *filenames]:
            if (base / name).is_symlink():
                entry = (base / name).relative_to(folder).as_posix()
                raise PackageError(ErrorCode.SYMLINK_ENTRY, f"{entry!r} is a symlink", entry=entry)
        found += [base / f for f in filenames if not f.startswith(".")]
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def _git_mode(mode: int) -> int:
    return 0o755 if mode & 0o111 else 0o644
