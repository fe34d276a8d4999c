"""A skill package read from its ZIP: the files that make it up, each readable bounded.

    package = open_package(data, limits)        # central directory + local headers checked
    package.files["scripts/run.py"].size        # declared size (proven at upload)
    package.read("scripts/run.py", max_bytes=64 * 1024)

Uploads open with `verify=True` (every entry inflated once before anything is stored); the
file API and the engine read stored packages through the same checked stream, one file at a
time, so a file is never decompressed past its size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chat_shell.packages._archive import ArchiveEntry, SafeArchive, open_archive
from chat_shell.packages._errors import PackageReadError, ReadCode
from chat_shell.packages._layout import Layout, lay_out
from chat_shell.packages.limits import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits


@dataclass(frozen=True)
class PackageFile:
    path: str  # relative to the package root
    size: int
    mode: int  # permission bits, e.g. 0o755 for an executable script


class Package:
    """The files of one skill package (see `_layout.py` for which entries those are)."""

    def __init__(self, archive: SafeArchive, layout: Layout[ArchiveEntry]) -> None:
        self._archive = archive
        self.layout = layout

    @property
    def files(self) -> Mapping[str, PackageFile]:
        """Every file by its path, sorted, with its size and mode."""
        return {
            path: PackageFile(path, e.size, e.mode or 0) for path, e in self.layout.files.items()
        }

    @property
    def skill_md_path(self) -> str:
        return self.layout.skill_md_path

    def read(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """One file by its exact path (as in `files`); `file_not_found` for anything else
        (`..` tricks and ignored dot-files included), `file_too_large` past `max_bytes`."""
        entry = self._entry(path)
        if max_bytes is not None and entry.size > max_bytes:
            raise PackageReadError(
                ReadCode.FILE_TOO_LARGE,
                f"{path!r} is {entry.size} bytes, more than the {max_bytes} asked for",
                entry=entry.name,
                path=path,
                size=entry.size,
                limit=max_bytes,
            )
        return self._archive.read(entry)

    def read_range(self, path: str, start: int, stop: int) -> bytes:
        """Bytes [start, stop) of one file (as `read` finds it), cut at its end; only that much
        is ever held, and the file is inflated no further than `stop`."""
        return self._archive.read_range(self._entry(path), start, stop)

    def _entry(self, path: str) -> ArchiveEntry:
        entry = self.layout.files.get(path)
        if entry is None:
            raise PackageReadError(
                ReadCode.FILE_NOT_FOUND, f"no file {path!r} in this skill package", path=path
            )
        return entry

    def read_all(self) -> dict[str, bytes]:
        """Every file's bytes by path (what a public skill's provider code is imported from)."""
        return {path: self._archive.read(e) for path, e in self.layout.files.items()}


def open_package(
    data: bytes, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS, *, verify: bool = False
) -> Package:
    """Check the archive and find its package; `verify` also inflates every entry once
    (real sizes and CRCs against the headers), as uploads must before storing."""
    archive = open_archive(data, limits)
    layout = lay_out(archive.entries)
    if verify:
        archive.verify()
    return Package(archive, layout)
