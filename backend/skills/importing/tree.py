"""A fetched tree of files, the skill folders in it, and one deterministic ZIP per folder.

Identical folders give identical ZIP bytes (sorted entries, fixed timestamps, normalized
modes, the same compression per file), hence the same sha256: a re-import of unchanged files
is `unchanged`, not a version.
"""

from __future__ import annotations

import os
import posixpath
import struct
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from isal import isal_zlib

from backend.skills.errors import ErrorCode, PackageError
from chat_shell import SKILL_MD_NAMES, PackageReadError, is_ignored


@dataclass(frozen=True)
class TreeFile:
    data: bytes
    mode: int  # permission bits: 0o755 for an executable, else 0o644
    # `_deflated(data)`, started while the fetch was still arriving (`start_deflate`), or None
    deflated: Future[bytes | None] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class FetchedTree:
    """What `fetch_source` fetched: the files under `path`, by path relative to it."""

    url: str
    ref: str | None
    commit: str | None  # the git commit the tree is at; None for an archive
    path: str  # "" or "a/b": the part of the source the files come from
    kind: Literal["git", "archive"]
    root_name: str  # folder name for a skill whose SKILL.md sits at the tree's root
    files: Mapping[str, TreeFile]
    # Files no package may hold (a symlink, an unsafe name): refused with their skill only.
    problems: Mapping[str, PackageReadError] = field(default_factory=dict)


def skill_folders(files: Mapping[str, object]) -> list[str]:
    """Folders holding a SKILL.md ("" for the root), outermost only, sorted."""
    found = sorted(
        {
            posixpath.dirname(path)
            for path in files
            if posixpath.basename(path) in SKILL_MD_NAMES and not is_ignored(path)
        }
    )
    outermost: list[str] = []
    for folder in found:
        if not any(_inside(folder, outer) for outer in outermost):
            outermost.append(folder)
    return outermost


def _inside(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


def folder_files(tree: FetchedTree, folder: str) -> dict[str, TreeFile]:
    """The folder's files by path relative to it, ignored dot-files left out."""
    prefix = f"{folder}/" if folder else ""
    return {
        path.removeprefix(prefix): file
        for path, file in tree.files.items()
        if path.startswith(prefix) and not is_ignored(path.removeprefix(prefix))
    }


def folder_problem(tree: FetchedTree, folder: str) -> PackageReadError | None:
    prefix = f"{folder}/" if folder else ""
    for path, problem in sorted(tree.problems.items()):
        if path.startswith(prefix) and not is_ignored(path.removeprefix(prefix)):
            return problem
    return None


@dataclass(frozen=True)
class BuiltZip:
    """A ZIP `build_zip` wrote from bytes in memory: its headers state the real sizes and CRCs
    by construction, so reading it need not inflate every entry to prove them (the names,
    sizes and every other rule are checked as for any upload)."""

    data: bytes


# Deflate through ISA-L (level 1: as small as zlib's level 1, several times faster, and the
# GIL released). Its output is fixed for a given library version on a given CPU family, as
# zlib's is for a given zlib: the same files give the same bytes on the same deployment.
_LEVEL = 1
# Enough to tell text from media: deflating the sample costs next to nothing.
_SAMPLE = 16 * 1024
_STORED, _DEFLATED = 0, 8
_DOS_DATE = (1 << 5) | 1  # 1980-01-01, the earliest a ZIP can say; time 00:00:00 is 0
_ZIP32_MAX = 0xFFFFFFFF
_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")


def _deflated(data: bytes) -> bytes | None:
    """The raw deflate stream of `data`, or None to store it: when a sample shows the bytes
    do not compress (media, archives), which costs nothing and loses next to nothing.
    Decided by the bytes alone, so the ZIP stays deterministic."""
    sample = data[:_SAMPLE]
    if len(sample) >= 1024 and len(isal_zlib.compress(sample, _LEVEL, -15)) > 0.9 * len(sample):
        return None
    return isal_zlib.compress(data, _LEVEL, -15)


# Files at least this large are deflated on `_DEFLATERS` threads (ISA-L releases the GIL);
# smaller ones cost less than handing them over.
_PARALLEL_BYTES = 64 * 1024
_DEFLATERS = ThreadPoolExecutor(
    max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="zip-deflate"
)


def start_deflate(data: bytes) -> Future[bytes | None] | None:
    """What `build_zip` will store for `data`, started now on the deflate threads (a fetch
    calls it for each blob as it arrives: the ZIP is then mostly built by the time the fetch
    ends); None for data small enough to deflate when the ZIP is built."""
    return _DEFLATERS.submit(_deflated, data) if len(data) >= _PARALLEL_BYTES else None


def _all_deflated(files: Mapping[str, TreeFile], paths: list[str]) -> list[bytes | None]:
    """`_deflated` of each file of `paths`, in order: the large ones on the deflate threads
    (from the deflate their fetch started, if it did), the small ones here meanwhile."""
    started = {p: files[p].deflated or start_deflate(files[p].data) for p in paths}
    inline = {p: _deflated(files[p].data) for p, future in started.items() if future is None}
    return [inline[p] if future is None else future.result() for p, future in started.items()]


def build_zip(files: Mapping[str, TreeFile], folder_name: str) -> BuiltZip:
    """The files as a skill ZIP inside `folder_name/`: same files, same bytes.

    Written here rather than by `zipfile`, which can only deflate through zlib: sorted
    entries, fixed timestamps, Unix modes 0o644 or 0o755, sizes and CRCs in the local headers
    (no data descriptors), no extra fields, no ZIP64 (the import limits stay far below it).
    The ZIP's parts are joined once, at the end: no growing buffer copied as it grows.
    """
    paths = sorted(files)
    parts: list[bytes] = []
    central: list[bytes] = []
    offset = 0
    for path, deflated in zip(paths, _all_deflated(files, paths), strict=True):
        file = files[path]
        name = f"{folder_name}/{path}".encode()
        flags = 0 if name.isascii() else 0x800  # UTF-8 names, as zipfile marks them
        method, stored = (_STORED, file.data) if deflated is None else (_DEFLATED, deflated)
        crc = isal_zlib.crc32(file.data)
        sizes = (crc, len(stored), len(file.data))
        local = _LOCAL.pack(b"PK\x03\x04", 20, flags, method, 0, _DOS_DATE, *sizes, len(name), 0)
        parts += (local, name, stored)
        mode = (0o100755 if file.mode & 0o111 else 0o100644) << 16  # a regular file
        central += (
            _CENTRAL.pack(
                b"PK\x01\x02", 3 << 8 | 20, 20, flags, method, 0, _DOS_DATE, *sizes,
                len(name), 0, 0, 0, 0, mode, offset,
            ),
            name,
        )  # fmt: skip
        offset += len(local) + len(name) + len(stored)
    count = len(files)
    central_size = sum(map(len, central))
    if offset + central_size > _ZIP32_MAX or count > 0xFFFF:
        raise PackageError(
            ErrorCode.UNCOMPRESSED_TOO_LARGE,
            "the skill's files are too large for one ZIP without ZIP64",
            limit=_ZIP32_MAX,
        )
    end = _END.pack(b"PK\x05\x06", 0, 0, count, count, central_size, offset, 0)
    return BuiltZip(b"".join([*parts, *central, end]))
