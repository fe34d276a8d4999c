"""Strict lint over a leniently imported package: warnings (code + message), never refusals.

The checks on standard fields mirror the reference validator `skills-ref` (the tests compare
verdicts on real skills). Where Skillhive knows better they differ on purpose: the Wegent
extension keys are fields here, not unknown keys, so they draw no warning.
`?strict=true` turns the warnings into one `strict_warnings` error (see `enforce_strict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from backend.crd.skill import SkillSpec, SkillWarning
from backend.skills.errors import ErrorCode, PackageError
from chat_shell import McpConfigError, McpPlaceholderError, parse_mcp_server, validate_placeholders

MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500


class WarningCode(StrEnum):
    UNKNOWN_FIELD = "unknown_field"
    NAME_DERIVED = "name_derived"
    NAME_NORMALIZED = "name_normalized"
    NAME_MISMATCH = "name_mismatch"
    DESCRIPTION_TOO_LONG = "description_too_long"
    COMPATIBILITY_TOO_LONG = "compatibility_too_long"
    CODE_NOT_ALLOWED = "code_not_allowed"
    OUTSIDE_ROOT = "outside_root"
    UNKNOWN_PLACEHOLDER = "unknown_placeholder"


def warning(code: WarningCode, message: str) -> SkillWarning:
    return SkillWarning(code=code.value, message=message)


def lint_spec(spec: SkillSpec, *, code_files: Sequence[str], public: bool) -> list[SkillWarning]:
    found = [
        warning(WarningCode.UNKNOWN_FIELD, f"non-standard frontmatter key {key!r} kept in extra")
        for key in spec.extra
    ]
    if len(spec.description) > MAX_DESCRIPTION_CHARS:
        found.append(
            warning(
                WarningCode.DESCRIPTION_TOO_LONG,
                f"description has {len(spec.description)} characters; "
                f"the Agent Skills limit is {MAX_DESCRIPTION_CHARS}",
            )
        )
    if spec.compatibility is not None and len(spec.compatibility) > MAX_COMPATIBILITY_CHARS:
        found.append(
            warning(
                WarningCode.COMPATIBILITY_TOO_LONG,
                f"compatibility has {len(spec.compatibility)} characters; "
                f"the Agent Skills limit is {MAX_COMPATIBILITY_CHARS}",
            )
        )
    if not public and (spec.provider is not None or code_files):
        what = ["a provider block"] if spec.provider is not None else []
        if code_files:
            what.append(f"{len(code_files)} code file(s) such as {code_files[0]!r}")
        found.append(
            warning(
                WarningCode.CODE_NOT_ALLOWED,
                f"{' and '.join(what)}: stored but never run, only public skills may run code",
            )
        )
    return found


def mcp_placeholder_warnings(spec: SkillSpec, *, public: bool, entry: str) -> list[SkillWarning]:
    """A placeholder no turn fills (`${{backend_url}}`, from another platform) is a warning:
    its server will never connect, but the skill's instructions still serve. A malformed one
    refuses the package, as it refuses a Ghost."""
    found = []
    for name, server in sorted(spec.mcp_servers.items()):
        raw = server.model_dump(by_alias=True, exclude_none=True)
        try:
            validate_placeholders(parse_mcp_server(raw, trusted=public))
        except McpConfigError:
            continue  # a config the engine cannot start: reported when a turn uses it
        except McpPlaceholderError as exc:
            placeholder = exc.details.get("placeholder")
            if placeholder is None:  # malformed
                raise PackageError(
                    ErrorCode.MCP_PLACEHOLDER_INVALID,
                    f"MCP server {name!r}: {exc.message}",
                    entry=entry,
                    server=name,
                    **exc.details,
                ) from None
            found.append(
                warning(
                    WarningCode.UNKNOWN_PLACEHOLDER,
                    f"MCP server {name!r}: {exc.message}; no turn has a value for it, so the "
                    "server will not connect",
                )
            )
    return found


def enforce_strict(warnings: Sequence[SkillWarning], *, entry: str) -> None:
    """Strict mode: any warning refuses the package (422), listing them all."""
    if warnings:
        listed = "; ".join(f"{w.code}: {w.message}" for w in warnings)
        raise PackageError(
            ErrorCode.STRICT_WARNINGS,
            f"strict mode refuses {len(warnings)} warning(s): {listed}",
            entry=entry,
            warnings=[w.model_dump() for w in warnings],
        )
