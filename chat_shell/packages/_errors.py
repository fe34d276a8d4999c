"""Why an archive or a file of it was refused: one stable code per rule, naming the entry."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from chat_shell.errors import ChatShellError


class ReadCode(StrEnum):
    # the archive (_archive.py)
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
    # an entry's bytes against its headers (_entry_data.py)
    LOCAL_HEADER_MISMATCH = "local_header_mismatch"
    ENTRY_SIZE_MISMATCH = "entry_size_mismatch"
    ENTRY_CRC_MISMATCH = "entry_crc_mismatch"
    CORRUPT_ENTRY = "corrupt_entry"
    # the package inside the archive (_layout.py, _package.py)
    SKILL_MD_MISSING = "skill_md_missing"
    AMBIGUOUS_ROOT = "ambiguous_root"
    FILE_NOT_FOUND = "file_not_found"
    FILE_TOO_LARGE = "file_too_large"


class PackageReadError(ChatShellError):
    """An archive, or a file asked from it, was refused; `details["entry"]` names the entry."""

    code = "package_read_error"

    def __init__(
        self, code: ReadCode, message: str, *, entry: str | None = None, **details: Any
    ) -> None:
        if entry is not None:
            details = {"entry": entry, **details}
        super().__init__(message, code=code.value, details=details)
        self.read_code = code
