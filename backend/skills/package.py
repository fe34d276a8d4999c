"""Reading a skill package: ZIP bytes in, a validated `SkillPackage` (or a `PackageError`) out.

Pure functions over bytes, on top of the one package reader (`chat_shell.packages`: archive
safety, which files make up the package, bounded checked reads), which the engine uses too.
An upload costs one SHA-256 pass, one pass over the central directory and local headers, one
bounded inflate of every entry (real sizes and CRCs must match the headers) and the parsing of
SKILL.md; files are read later one at a time (`read_package_file`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from backend.crd.common import SkillMeta
from backend.crd.skill import Skill, SkillFile, SkillSpec, SkillStatus, SkillWarning
from backend.skills.errors import ErrorCode, PackageError, translated
from backend.skills.fields import build_spec, resolve_name
from backend.skills.frontmatter import parse_skill_md
from backend.skills.limits import DEFAULT_LIMITS, ArchiveLimits
from backend.skills.lint import (
    WarningCode,
    enforce_strict,
    lint_spec,
    mcp_placeholder_warnings,
    warning,
)
from chat_shell import SKILL_MD_NAMES, PackageFile, open_package
from chat_shell import check_archive_size as _check_archive_size

__all__ = ["SKILL_MD_NAMES", "PackageFile", "SkillPackage", "read_package", "read_package_file"]

CODE_SUFFIXES = (".py", ".pyc")


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
        meta = SkillMeta(
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
    verify: bool = True,
) -> SkillPackage:
    """Validate a skill ZIP (every entry verified) and read its metadata.

    `public`: read as a public (admin) skill, which may carry code. `strict`: refuse any
    warning. `fallback_name`: names a skill whose archive has no folder and whose frontmatter
    no name. `sha256`: the digest, when the caller already hashed the bytes as they arrived.
    `verify=False` skips inflating every entry against its header, only for a ZIP this process
    wrote itself from bytes in memory (`importing.tree.BuiltZip`); never for received bytes.
    """
    with translated():
        package = open_package(data, limits, verify=verify)
        layout = package.layout
        md_entry = layout.skill_md
        if md_entry.size > limits.max_skill_md_bytes:
            raise PackageError(
                ErrorCode.SKILL_MD_TOO_LARGE,
                f"{md_entry.name} is {md_entry.size} bytes, at most {limits.max_skill_md_bytes}",
                entry=md_entry.name,
                limit=limits.max_skill_md_bytes,
            )
        md_bytes = package.read(package.skill_md_path)
    md = parse_skill_md(
        md_bytes, entry=md_entry.name, max_frontmatter_bytes=limits.max_frontmatter_bytes
    )
    name, warnings = resolve_name(md, layout.folder, entry=md_entry.name, fallback=fallback_name)
    files = tuple(package.files.values())
    spec = build_spec(md, [SkillFile(path=f.path, size=f.size) for f in files], entry=md_entry.name)
    code_files = [f.path for f in files if f.path.endswith(CODE_SUFFIXES)]
    warnings += lint_spec(spec, code_files=code_files, public=public)
    warnings += mcp_placeholder_warnings(spec, public=public, entry=md_entry.name)
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
    with translated():
        return open_package(data, limits).read(path)


def check_archive_size(size: int, limits: ArchiveLimits) -> None:
    """413 `archive_too_large`; the upload route calls it while the body streams in (per
    chunk: the size alone is tested before the error translation is set up)."""
    if size <= limits.max_archive_bytes:
        return
    with translated():
        _check_archive_size(size, limits)
