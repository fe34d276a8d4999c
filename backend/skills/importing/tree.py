"""A fetched tree of files, the skill folders in it, and one deterministic ZIP per folder.

Identical folders give identical ZIP bytes (sorted entries, fixed timestamps, normalized
modes, the same compression per file), hence the same sha256: a re-import of unchanged files
is `unchanged`, not a version.
"""

from __future__ import annotations

import io
import posixpath
import stat
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from chat_shell import SKILL_MD_NAMES, PackageReadError, is_ignored

FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a ZIP can say
# Enough to tell text from media: a larger sample cost as much as compressing the file itself.
_SAMPLE = 16 * 1024


def _method(data: bytes) -> int:
    """Deflate (fast level) unless a sample shows the bytes do not compress (media, archives):
    those are stored, which costs nothing and loses next to nothing. Decided by the bytes
    alone, so the ZIP stays deterministic."""
    sample = data[:_SAMPLE]
    if len(sample) >= 1024 and len(zlib.compress(sample, 1)) > 0.9 * len(sample):
        return zipfile.ZIP_STORED
    return zipfile.ZIP_DEFLATED


@dataclass(frozen=True)
class TreeFile:
    data: bytes
    mode: int  # permission bits: 0o755 for an executable, else 0o644


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


def build_zip(files: Mapping[str, TreeFile], folder_name: str) -> BuiltZip:
    """The files as a skill ZIP inside `folder_name/`: same files, same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            file = files[path]
            info = zipfile.ZipInfo(f"{folder_name}/{path}", date_time=FIXED_TIME)
            info.create_system = 3  # Unix: the mode below is read back
            info.external_attr = (stat.S_IFREG | (0o755 if file.mode & 0o111 else 0o644)) << 16
            info.compress_type = _method(file.data)
            archive.writestr(info, file.data, compresslevel=1)
    return BuiltZip(buffer.getvalue())
