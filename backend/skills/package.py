"""Reading a skill package: ZIP bytes in, a validated `SkillPackage` (or a `PackageError`) out.

Pure functions over bytes. The cost is one SHA-256 pass, one pass over the central directory
and the decompression of SKILL.md alone; other entries are only read on demand
(`read_package_file`), always through the bounded reader of `archive.py`.

Layout: `SKILL.md` (or `skill.md`, as `skills-ref` accepts) sits at the archive root or inside
exactly one top-level folder. `__MACOSX/` and dot-files are ignored; files outside the skill's
folder are left out of it with an `outside_root` warning.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from backend.crd.common import ObjectMeta
from backend.crd.skill import Skill, SkillFile, SkillSpec, SkillStatus, SkillWarning
from backend.skills.archive import ArchiveEntry, SafeArchive, open_archive
from backend.skills.errors import ErrorCode, PackageError
from backend.skills.fields import build_spec, resolve_name
from backend.skills.frontmatter import parse_skill_md
from backend.skills.limits import DEFAULT_LIMITS, ArchiveLimits
from backend.skills.lint import WarningCode, enforce_strict, lint_spec, warning

SKILL_MD_NAMES = ("SKILL.md", "skill.md")  # in order of preference
CODE_SUFFIXES = (".py", ".pyc")


@dataclass(frozen=True)
class PackageFile:
    path: str  # relative to the skill's folder
    size: int
    mode: int  # permission bits, e.g. 0o755 for an executable script


@dataclass(frozen=True)
class SkillPackage:
    name: str
    spec: SkillSpec  # frontmatter fields, prompt (the Markdown body), files, extra keys
    files: tuple[PackageFile, ...]
    warnings: tuple[SkillWarning, ...]
    sha256: str  # of the ZIP bytes
    size: int  # of the ZIP bytes
    public: bool  # what it was read as: decides `code_not_allowed` and `codeAllowed`
    has_code: bool  # a provider block or Python files

    def to_crd(
        self,
        *,
        namespace: str = "default",
        labels: dict[str, str] | None = None,
        enabled: bool = True,
        resource_version: int | None = None,
        creation_timestamp: datetime | None = None,
    ) -> Skill:
        meta = ObjectMeta(
            name=self.name,
            namespace=namespace,
            labels=labels or {},
            resource_version=resource_version,
            creation_timestamp=creation_timestamp,
        )
        status = SkillStatus(
            sha256=self.sha256,
            size=self.size,
            public=self.public,
            code_allowed=self.public,
            warnings=list(self.warnings),
            enabled=enabled,
        )
        return Skill(metadata=meta, spec=self.spec, status=status)


def read_package(
    data: bytes,
    *,
    limits: ArchiveLimits = DEFAULT_LIMITS,
    public: bool = False,
    strict: bool = False,
    fallback_name: str | None = None,
    sha256: str | None = None,
) -> SkillPackage:
    """Validate a skill ZIP and read its metadata.

    `public`: read as a public (admin) skill, which may carry code. `strict`: refuse any
    warning. `fallback_name`: names a skill whose archive has no folder and whose frontmatter
    no name. `sha256`: the digest, when the caller already hashed the bytes as they arrived.
    """
    archive = open_archive(data, limits)
    layout = _Layout(archive)
    md_entry = layout.skill_md
    if md_entry.size > limits.max_skill_md_bytes:
        raise PackageError(
            ErrorCode.SKILL_MD_TOO_LARGE,
            f"{md_entry.name} is {md_entry.size} bytes, at most {limits.max_skill_md_bytes}",
            entry=md_entry.name,
            limit=limits.max_skill_md_bytes,
        )
    md = parse_skill_md(
        archive.read(md_entry),
        entry=md_entry.name,
        max_frontmatter_bytes=limits.max_frontmatter_bytes,
    )
    name, warnings = resolve_name(md, layout.folder, entry=md_entry.name, fallback=fallback_name)
    files = tuple(PackageFile(path, e.size, e.mode) for path, e in sorted(layout.files.items()))
    spec = build_spec(md, [SkillFile(path=f.path, size=f.size) for f in files], entry=md_entry.name)
    code_files = [f.path for f in files if f.path.endswith(CODE_SUFFIXES)]
    warnings += lint_spec(spec, code_files=code_files, public=public)
    if layout.outside:
        warnings.append(
            warning(
                WarningCode.OUTSIDE_ROOT,
                f"{len(layout.outside)} entries outside {layout.root!r} are not part of the "
                f"skill, e.g. {layout.outside[0]!r}",
            )
        )
    if strict:
        enforce_strict(warnings, entry=md_entry.name)
    return SkillPackage(
        name=name,
        spec=spec,
        files=files,
        warnings=tuple(warnings),
        sha256=sha256 or hashlib.sha256(data).hexdigest(),
        size=len(data),
        public=public,
        has_code=spec.provider is not None or bool(code_files),
    )


def read_package_file(data: bytes, path: str, *, limits: ArchiveLimits = DEFAULT_LIMITS) -> bytes:
    """One file of a stored package by its path in the skill's folder (as in `spec.files`).

    Only exact paths of the package's own files resolve; anything else, including `..` tricks
    and ignored dot-files, is 404 `file_not_found`.
    """
    archive = open_archive(data, limits)
    entry = _Layout(archive).files.get(path)
    if entry is None:
        raise PackageError(
            ErrorCode.FILE_NOT_FOUND, f"no file {path!r} in this skill package", path=path
        )
    return archive.read(entry)


def is_ignored(name: str) -> bool:
    """macOS resource forks and dot-files travel in archives by accident; they are not content."""
    parts = name.split("/")
    return parts[0] == "__MACOSX" or any(part.startswith(".") for part in parts)


class _Layout:
    """Where the skill sits in the archive: its folder (`root`), SKILL.md and its files."""

    def __init__(self, archive: SafeArchive) -> None:
        visible = {e.name: e for e in archive.entries if not is_ignored(e.name)}
        self.root = "" if _skill_md(visible, "") else _single_folder(visible)
        self.folder = self.root.removesuffix("/") or None
        skill_md = _skill_md(visible, self.root)
        assert skill_md is not None  # _single_folder picked a folder holding one
        self.skill_md: ArchiveEntry = skill_md
        self.files = {
            n.removeprefix(self.root): e for n, e in visible.items() if n.startswith(self.root)
        }
        self.outside = sorted(n for n in visible if not n.startswith(self.root))


def _skill_md(entries: dict[str, ArchiveEntry], root: str) -> ArchiveEntry | None:
    return next((entries[root + n] for n in SKILL_MD_NAMES if root + n in entries), None)


def _single_folder(entries: dict[str, ArchiveEntry]) -> str:
    """The one top-level folder holding a SKILL.md (a SKILL.md at the root was looked for first)."""
    found = sorted(
        name for name in entries if name.count("/") == 1 and name.split("/")[1] in SKILL_MD_NAMES
    )
    folders = sorted({name.split("/")[0] + "/" for name in found})
    if not folders:
        raise PackageError(
            ErrorCode.SKILL_MD_MISSING, "no SKILL.md at the archive root or in a top-level folder"
        )
    if len(folders) > 1:
        raise PackageError(
            ErrorCode.AMBIGUOUS_ROOT,
            f"SKILL.md found in {len(folders)} top-level folders: {', '.join(folders)}",
            entry=found[-1],
            candidates=found,
        )
    return folders[0]
