"""Why a skill package was refused: one stable code per rule (docs/architecture.md).

Every refusal is a `PackageError` whose `details["entry"]` names the offending archive entry
when there is one. The archive and layout rules live in the one package reader
(`chat_shell/packages`); `translated()` turns its refusals into these, code for code.
Status: 413 for an archive over the size cap, 404 for a file that is not in the package, 422
for everything else (the bytes arrived fine; their content breaks a rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any

from backend.errors import SkillhiveError
from chat_shell import PackageReadError


class ErrorCode(StrEnum):
    # archive safety (chat_shell/packages/_archive.py, _entry_data.py)
    ARCHIVE_TOO_LARGE = "archive_too_large"
    NOT_A_ZIP = "not_a_zip"
    TOO_MANY_ENTRIES = "too_many_entries"
    UNCOMPRESSED_TOO_LARGE = "uncompressed_too_large"
    COMPRESSION_RATIO_EXCEEDED = "compression_ratio_exceeded"
    UNSAFE_PATH = "unsafe_path"
    SYMLINK_ENTRY = "symlink_entry"
    NON_REGULAR_ENTRY = "non_regular_entry"
    DUPLICATE_ENTRY = "duplicate_entry"
    ENCRYPTED_ENTRY = "encrypted_entry"
    UNSUPPORTED_COMPRESSION = "unsupported_compression"
    CORRUPT_ENTRY = "corrupt_entry"
    LOCAL_HEADER_MISMATCH = "local_header_mismatch"
    ENTRY_SIZE_MISMATCH = "entry_size_mismatch"
    ENTRY_CRC_MISMATCH = "entry_crc_mismatch"
    # package layout (chat_shell/packages/_layout.py, backend/skills/package.py)
    SKILL_MD_MISSING = "skill_md_missing"
    AMBIGUOUS_ROOT = "ambiguous_root"
    SKILL_MD_TOO_LARGE = "skill_md_too_large"
    FILE_NOT_FOUND = "file_not_found"
    FILE_TOO_LARGE = "file_too_large"
    # SKILL.md content (backend/skills/frontmatter.py, fields.py)
    INVALID_UTF8 = "invalid_utf8"
    INVALID_FRONTMATTER = "invalid_frontmatter"
    FRONTMATTER_TOO_LARGE = "frontmatter_too_large"
    FRONTMATTER_TOO_COMPLEX = "frontmatter_too_complex"
    YAML_ERROR = "yaml_error"
    MISSING_FIELD = "missing_field"
    INVALID_FIELD = "invalid_field"
    INVALID_NAME = "invalid_name"
    MCP_PLACEHOLDER_INVALID = "mcp_placeholder_invalid"
    # lint (backend/skills/lint.py)
    STRICT_WARNINGS = "strict_warnings"


_STATUS = {ErrorCode.ARCHIVE_TOO_LARGE: 413, ErrorCode.FILE_NOT_FOUND: 404}


class PackageError(SkillhiveError):
    """A skill package (or a file asked from it) was refused; nothing about it may be stored."""

    status_code = 422

    def __init__(
        self, code: ErrorCode, message: str, *, entry: str | None = None, **details: Any
    ) -> None:
        if entry is not None:
            details = {"entry": entry, **details}
        super().__init__(
            message, code=code.value, status_code=_STATUS.get(code, 422), details=details
        )


@contextmanager
def translated() -> Iterator[None]:
    """Refusals of the package reader become `PackageError`s with the same code and details."""
    try:
        yield
    except PackageReadError as exc:
        raise PackageError(ErrorCode(exc.code), exc.message, **exc.details) from None
