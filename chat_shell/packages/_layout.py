"""Which files make up a skill package: the one answer, for uploads, the file API and the engine.

`SKILL.md` (or `skill.md`, as `skills-ref` accepts) sits at the archive root or inside exactly
one top-level folder: the package root. `__MACOSX/` and dot-files or dot-folders anywhere are
ignored (they travel in archives by accident, and must never hide a second package). Files
outside the root are not part of the package (`outside` lists them for a warning).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from chat_shell.packages._errors import PackageReadError, ReadCode

SKILL_MD_NAMES = ("SKILL.md", "skill.md")  # in order of preference


class Named(Protocol):
    @property
    def name(self) -> str: ...


E = TypeVar("E", bound=Named)


def is_ignored(name: str) -> bool:
    """macOS resource forks and dot-files travel in archives by accident; they are not content."""
    parts = name.split("/")
    return parts[0] == "__MACOSX" or any(part.startswith(".") for part in parts)


@dataclass(frozen=True)
class Layout(Generic[E]):
    """Where the package sits among an archive's files and which of them it is made of."""

    root: str  # "" or "folder/"
    skill_md: E
    files: Mapping[str, E]  # by path relative to the root, sorted
    outside: Sequence[str]  # visible entries outside the root, sorted

    @property
    def folder(self) -> str | None:
        return self.root.removesuffix("/") or None

    @property
    def skill_md_path(self) -> str:
        return self.skill_md.name.removeprefix(self.root)


def lay_out(entries: Sequence[E]) -> Layout[E]:
    """The package made of `entries` (regular files, names already checked safe)."""
    visible = {e.name: e for e in entries if not is_ignored(e.name)}
    root = "" if _skill_md(visible, "") else _single_folder(visible)
    skill_md = _skill_md(visible, root)
    assert skill_md is not None  # _single_folder picked a folder holding one
    files = {n.removeprefix(root): e for n, e in sorted(visible.items()) if n.startswith(root)}
    outside = sorted(n for n in visible if not n.startswith(root))
    return Layout(root=root, skill_md=skill_md, files=files, outside=outside)


def _skill_md(entries: Mapping[str, E], root: str) -> E | None:
    return next((entries[root + n] for n in SKILL_MD_NAMES if root + n in entries), None)


def _single_folder(entries: Mapping[str, Named]) -> str:
    """The one top-level folder holding a SKILL.md (a SKILL.md at the root was looked for first)."""
    found = sorted(
        name for name in entries if name.count("/") == 1 and name.split("/")[1] in SKILL_MD_NAMES
    )
    folders = sorted({name.split("/")[0] + "/" for name in found})
    if not folders:
        raise PackageReadError(
            ReadCode.SKILL_MD_MISSING, "no SKILL.md at the archive root or in a top-level folder"
        )
    if len(folders) > 1:
        raise PackageReadError(
            ReadCode.AMBIGUOUS_ROOT,
            f"SKILL.md found in {len(folders)} top-level folders: {', '.join(folders)}",
            entry=found[-1],
            candidates=found,
        )
    return folders[0]
