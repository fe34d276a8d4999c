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
from backend.secrets.service import NAME_RE as SECRET_NAME
from backend.skills.errors import ErrorCode, PackageError
from chat_shell import (
    McpConfigError,
    McpPlaceholderError,
    find_placeholders,
    parse_mcp_server,
    validate_placeholders,
)

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
    MCP_SERVER_UNUSABLE = "mcp_server_unusable"


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
    """What keeps a skill's MCP server from ever connecting is a warning: a config the engine
    cannot read, a placeholder no turn fills (`${{backend_url}}`, from another platform), a
    `${{secrets.NAME}}` no secret can be named; the skill's instructions still serve. A
    malformed placeholder refuses the package, as it refuses a Ghost."""
    found = []
    for name, server in sorted(spec.mcp_servers.items()):
        raw = server.model_dump(by_alias=True, exclude_none=True)
        try:
            config = parse_mcp_server(raw, trusted=public)
            validate_placeholders(config)
        except McpConfigError as exc:
            found.append(_never_connects(WarningCode.MCP_SERVER_UNUSABLE, name, exc.message))
            continue
        except McpPlaceholderError as exc:
            if exc.details.get("placeholder") is None:  # malformed
                raise PackageError(
                    ErrorCode.MCP_PLACEHOLDER_INVALID,
                    f"MCP server {name!r}: {exc.message}",
                    entry=entry,
                    server=name,
                    **exc.details,
                ) from None
            found.append(_never_connects(WarningCode.UNKNOWN_PLACEHOLDER, name, exc.message))
            continue
        for path in sorted(find_placeholders(config)):
            root, _, secret = path.partition(".")
            if root == "secrets" and not SECRET_NAME.fullmatch(secret):
                why = f"${{{{{path}}}}} names no possible secret"
                found.append(_never_connects(WarningCode.UNKNOWN_PLACEHOLDER, name, why))
    return found


def _never_connects(code: WarningCode, server: str, why: str) -> SkillWarning:
    return warning(
        code,
        f"MCP server {server!r}: {why}; no turn can start it, so it will not connect",
    )


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
