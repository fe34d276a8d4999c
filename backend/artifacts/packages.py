"""A skill package from an artifact: a ZIP as it is, a tar (plain or compressed) re-packed.

The tar is read with the package reader's caps and refusal codes (entries, total size, links,
unsafe paths) before anything is unpacked; the ZIP it becomes then goes through every upload
rule like any upload. A compressed tar is inflated first, whole and bounded
(`backend/skills/tars.py`).
"""

from __future__ import annotations

import io
import lzma
import tarfile
import zipfile
import zlib

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.limits import ArchiveLimits
from backend.skills.tars import TarTooLarge, inflated_tar
from chat_shell import safe_relative_path, shown_name

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def package_zip(data: bytes, limits: ArchiveLimits) -> bytes:
    if data.startswith(ZIP_MAGIC):
        return data
    try:
        return _tar_to_zip(data, limits)
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError):
        raise PackageError(
            ErrorCode.NOT_A_ZIP, "the artifact is neither a ZIP nor a tar archive"
        ) from None


def _tar_to_zip(data: bytes, limits: ArchiveLimits) -> bytes:
    if len(data) > limits.max_archive_bytes:
        raise PackageError(
            ErrorCode.ARCHIVE_TOO_LARGE,
            f"archive is larger than {limits.max_archive_bytes} bytes",
            limit=limits.max_archive_bytes,
        )
    try:
        tar_bytes = inflated_tar(
            data, file_bytes=limits.max_uncompressed_bytes, entries=limits.max_archive_entries
        )
    except TarTooLarge as exc:
        raise PackageError(
            ErrorCode.UNCOMPRESSED_TOO_LARGE, str(exc), limit=limits.max_uncompressed_bytes
        ) from None
    out = io.BytesIO()
    total = 0
    entries = 0
    seen: set[str] = set()
    with (
        tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        for member in tar:
            entries += 1
            if entries > limits.max_archive_entries:
                raise PackageError(
                    ErrorCode.TOO_MANY_ENTRIES,
                    f"more than {limits.max_archive_entries} entries",
                    limit=limits.max_archive_entries,
                )
            if member.isdir():
                continue
            entry = shown_name(member.name)  # what the refusals name: always encodable
            if member.issym() or member.islnk():
                raise PackageError(ErrorCode.SYMLINK_ENTRY, "links are not allowed", entry=entry)
            if not member.isreg():
                raise PackageError(ErrorCode.NON_REGULAR_ENTRY, "only regular files", entry=entry)
            name = safe_relative_path(member.name)
            if name is None:
                raise PackageError(ErrorCode.UNSAFE_PATH, "unsafe path", entry=entry)
            if str(name) in seen:
                raise PackageError(ErrorCode.DUPLICATE_ENTRY, "duplicate entry", entry=entry)
            seen.add(str(name))
            total += member.size
            if total > limits.max_uncompressed_bytes:
                raise PackageError(
                    ErrorCode.UNCOMPRESSED_TOO_LARGE,
                    f"more than {limits.max_uncompressed_bytes} bytes unpacked",
                    limit=limits.max_uncompressed_bytes,
                )
            handle = tar.extractfile(member)
            if handle is None:
                raise PackageError(ErrorCode.CORRUPT_ENTRY, "unreadable", entry=entry)
            archive.writestr(str(name), handle.read(member.size))
    return out.getvalue()
