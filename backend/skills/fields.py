"""From parsed frontmatter to a validated `SkillSpec` and the skill's name.

Lenient import: keys beyond the Agent Skills standard and the Wegent extensions are kept in
`spec.extra` (lint warns about them); a key whose value is empty (`license:`) counts as absent.
Type errors become `invalid_field` / `missing_field` naming the field (`tools[0].name`), never
an exception of another kind: `SkillSpec` does the type checking, this module maps its errors.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from backend.crd.common import name_problem
from backend.crd.skill import SkillFile, SkillSpec, SkillWarning
from backend.skills.errors import ErrorCode, PackageError
from backend.skills.frontmatter import SkillMarkdown
from backend.skills.lint import WarningCode, warning

STANDARD_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "allowed-tools", "metadata"}
)
EXTENSION_KEYS = frozenset(  # Wegent's, typed by SkillSpec; not "unknown" to Skillhive
    {"displayName", "version", "author", "tags", "bindShells", "config", "tools", "provider"}
    | {"mcpServers"}
)
KNOWN_KEYS = STANDARD_KEYS | EXTENSION_KEYS
# Fields whose YAML numbers/booleans are taken as written: `version: 1.10` is "1.10".
_TEXT_KEYS = ("name", "description", "license", "compatibility", "displayName", "version", "author")


def build_spec(md: SkillMarkdown, files: Sequence[SkillFile], *, entry: str) -> SkillSpec:
    data = {k: v for k, v in _as_written(md).items() if not _is_empty(v)}
    known = {k: v for k, v in data.items() if k in KNOWN_KEYS and k != "name"}  # name: below
    extra = {k: v for k, v in data.items() if k not in KNOWN_KEYS}
    try:
        return SkillSpec.model_validate(
            {**known, "prompt": md.body, "files": list(files), "extra": extra}
        )
    except ValidationError as exc:
        problems = [
            {"field": _field_path(e["loc"]), "problem": e["msg"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        first = exc.errors()[0]
        code = ErrorCode.MISSING_FIELD if first["type"] == "missing" else ErrorCode.INVALID_FIELD
        field, problem = problems[0]["field"], problems[0]["problem"]
        raise PackageError(
            code,
            f"frontmatter field '{field}': {problem}",
            entry=entry,
            field=field,
            problems=problems,
        ) from None


def resolve_name(
    md: SkillMarkdown, folder: str | None, *, entry: str, fallback: str | None = None
) -> tuple[str, list[SkillWarning]]:
    """The skill's name: the frontmatter's, else derived (with a warning) from the archive's
    top-level folder or, for an archive without one, from `fallback` (e.g. the upload's file
    name). Only a real folder is compared with an explicit name."""
    explicit = _as_written(md).get("name")
    if _is_empty(explicit):
        return _derived_name(folder or fallback, entry)
    if not isinstance(explicit, str):
        raise _invalid_name(f"name must be a string, not {type(explicit).__name__}", entry)
    name = unicodedata.normalize("NFKC", explicit.strip())
    warnings = []
    problem = name_problem(name)
    if problem is not None:
        # Wegent names skills in snake_case; that one habit is fixed, not refused.
        fixed = name.replace("_", "-")
        if "_" not in name or name_problem(fixed) is not None:
            raise _invalid_name(f"name {name!r} {problem}", entry, rule=problem)
        warnings.append(warning(WarningCode.NAME_NORMALIZED, f"name {name!r} became {fixed!r}"))
        name = fixed
    if folder is not None and name != unicodedata.normalize("NFKC", folder):
        warnings.append(
            warning(WarningCode.NAME_MISMATCH, f"name {name!r} differs from its folder {folder!r}")
        )
    return name, warnings


def _derived_name(folder: str | None, entry: str) -> tuple[str, list[SkillWarning]]:
    if folder is None:
        raise PackageError(
            ErrorCode.MISSING_FIELD,
            "the frontmatter has no 'name' and the archive no folder to derive it from",
            entry=entry,
            field="name",
        )
    name = folder.lower().replace("_", "-")
    problem = name_problem(name)
    if problem is not None:
        raise _invalid_name(
            f"name {name!r} derived from folder {folder!r} {problem}", entry, rule=problem
        )
    message = f"no 'name' in the frontmatter; derived {name!r} from folder {folder!r}"
    return name, [warning(WarningCode.NAME_DERIVED, message)]


def _invalid_name(message: str, entry: str, *, rule: str | None = None) -> PackageError:
    return PackageError(ErrorCode.INVALID_NAME, message, entry=entry, field="name", rule=rule)


def _is_empty(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _as_written(md: SkillMarkdown) -> dict[str, Any]:
    fm = md.frontmatter
    return {k: md.raw_scalars.get(k, v) if k in _TEXT_KEYS else v for k, v in fm.items()}


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path
