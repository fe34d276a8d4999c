"""Archive safety: a ZIP is hostile until its central directory passed every rule here.

Only the central directory is inspected (no entry is decompressed), so checking a 10 MiB
archive costs about as much as opening it with `zipfile`. Entries are read later through
`SafeArchive.read`, which never returns more than the declared size (already capped here) and
refuses data that does not match the header's CRC: a lying header cannot blow up memory.
"""

from __future__ import annotations

import io
import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass, field

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.limits import ArchiveLimits

MAX_ENTRY_NAME_LENGTH = 1024  # bounds the file list stored in the CRD
DEFAULT_MODE = 0o644  # archives made on Windows carry no Unix mode
_SUPPORTED_COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class ArchiveEntry:
    """A regular file of a checked archive: full name, declared size and permission bits."""

    name: str
    size: int
    mode: int
    info: zipfile.ZipInfo = field(repr=False, compare=False)


class SafeArchive:
    """A ZIP whose central directory passed `open_archive`; `entries` are its regular files."""

    def __init__(self, zf: zipfile.ZipFile, entries: list[ArchiveEntry]) -> None:
        self._zf = zf
        self.entries = entries

    def read(self, entry: ArchiveEntry) -> bytes:
        # ZipExtFile stops at the declared size and checks the CRC once it gets there, so a
        # header that understates the real data yields `corrupt_entry`, not a bigger buffer.
        try:
            with self._zf.open(entry.info) as f:
                data = f.read(entry.size)
        except (zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
            raise PackageError(
                ErrorCode.CORRUPT_ENTRY, f"entry {entry.name!r} is corrupt: {exc}", entry=entry.name
            ) from exc
        if len(data) != entry.size:
            raise PackageError(
                ErrorCode.CORRUPT_ENTRY,
                f"entry {entry.name!r} holds {len(data)} bytes, its header says {entry.size}",
                entry=entry.name,
            )
        return data


def check_archive_size(size: int, limits: ArchiveLimits) -> None:
    """413 for an archive over the cap; the upload route calls it while streaming the body."""
    if size > limits.max_archive_bytes:
        raise PackageError(
            ErrorCode.ARCHIVE_TOO_LARGE,
            f"archive is larger than {limits.max_archive_bytes} bytes",
            limit=limits.max_archive_bytes,
        )


def open_archive(data: bytes, limits: ArchiveLimits) -> SafeArchive:
    """Check every entry of the central directory against the safety rules, in one pass."""
    check_archive_size(len(data), limits)
    declared = central_directory_entries(data)
    if declared is None:
        raise PackageError(ErrorCode.NOT_A_ZIP, "not a ZIP archive (no end of central directory)")
    _check_entry_count(declared, limits)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise PackageError(ErrorCode.NOT_A_ZIP, f"not a readable ZIP archive: {exc}") from exc
    infos = zf.infolist()
    _check_entry_count(len(infos), limits)
    seen: set[str] = set()
    total = 0
    entries = []
    for info in infos:
        name = info.orig_filename  # `filename` is cut at a NUL byte; the original is not
        _check_name(name, seen)
        _check_storage(info, name, limits)
        total += info.file_size
        if total > limits.max_uncompressed_bytes:
            raise PackageError(
                ErrorCode.UNCOMPRESSED_TOO_LARGE,
                f"entries add up to more than {limits.max_uncompressed_bytes} bytes "
                f"uncompressed (reached at {name!r})",
                entry=name,
                limit=limits.max_uncompressed_bytes,
            )
        mode = _regular_mode(info, name)
        if mode is not None:
            entries.append(ArchiveEntry(name, info.file_size, mode, info))
    return SafeArchive(zf, entries)


def _check_entry_count(count: int, limits: ArchiveLimits) -> None:
    if count > limits.max_archive_entries:
        raise PackageError(
            ErrorCode.TOO_MANY_ENTRIES,
            f"archive has {count} entries, at most {limits.max_archive_entries} are allowed",
            count=count,
            limit=limits.max_archive_entries,
        )


def path_problem(name: str) -> str | None:
    """Why `name` is not a safe relative POSIX path inside an archive, or None."""
    if not name:
        return "empty name"
    if len(name) > MAX_ENTRY_NAME_LENGTH:
        return f"name longer than {MAX_ENTRY_NAME_LENGTH} characters"
    if "\x00" in name:
        return "NUL byte in name"
    if _CONTROL.search(name):
        return "control character in name"
    if "\\" in name:
        return "backslash in name"
    if _DRIVE.match(name):
        return "drive letter"
    if ":" in name:
        return "':' in name"
    if name.startswith("/"):
        return "absolute path"
    segments = name.removesuffix("/").split("/")  # a trailing '/' marks a directory entry
    if ".." in segments:
        return "'..' segment"
    if "" in segments or "." in segments:
        return "empty or '.' segment"
    return None


def _check_name(name: str, seen: set[str]) -> None:
    problem = path_problem(name)
    if problem is not None:
        raise PackageError(
            ErrorCode.UNSAFE_PATH,
            f"unsafe entry name {name!r}: {problem}",
            entry=name,
            reason=problem,
        )
    if name in seen:
        raise PackageError(ErrorCode.DUPLICATE_ENTRY, f"duplicate entry {name!r}", entry=name)
    seen.add(name)


def _check_storage(info: zipfile.ZipInfo, name: str, limits: ArchiveLimits) -> None:
    if info.flag_bits & 0x1:
        raise PackageError(ErrorCode.ENCRYPTED_ENTRY, f"entry {name!r} is encrypted", entry=name)
    if info.compress_type not in _SUPPORTED_COMPRESSION:
        raise PackageError(
            ErrorCode.UNSUPPORTED_COMPRESSION,
            f"entry {name!r} uses compression method {info.compress_type}; "
            f"only {' and '.join(_SUPPORTED_COMPRESSION.values())} are supported",
            entry=name,
            method=info.compress_type,
        )
    size = info.file_size
    ratio = size / max(info.compress_size, 1)
    if size > limits.compression_ratio_min_bytes and ratio > limits.max_compression_ratio:
        raise PackageError(
            ErrorCode.COMPRESSION_RATIO_EXCEEDED,
            f"entry {name!r} expands {ratio:.0f}x (at most {limits.max_compression_ratio:g}x "
            f"for entries over {limits.compression_ratio_min_bytes} bytes)",
            entry=name,
            ratio=round(ratio, 1),
            limit=limits.max_compression_ratio,
        )


def _regular_mode(info: zipfile.ZipInfo, name: str) -> int | None:
    """Permission bits of a regular file, None for a directory; refuse anything else."""
    unix = info.external_attr >> 16
    kind = stat.S_IFMT(unix)
    if kind == stat.S_IFLNK:
        raise PackageError(ErrorCode.SYMLINK_ENTRY, f"entry {name!r} is a symlink", entry=name)
    is_dir = name.endswith("/")
    if kind not in (0, stat.S_IFDIR if is_dir else stat.S_IFREG):
        raise PackageError(
            ErrorCode.NON_REGULAR_ENTRY,
            f"entry {name!r} is not a regular file (file type {kind:o})",
            entry=name,
        )
    if is_dir:
        return None
    # Keep the rwx bits (scripts stay executable); setuid, setgid and sticky never survive.
    return (unix & 0o777) or DEFAULT_MODE


_EOCD = struct.Struct("<4s4H2LH")
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64_SIZE = 56
_CENTRAL_HEADER = b"PK\x01\x02"


def central_directory_entries(data: bytes) -> int | None:
    """Entry count of the central directory, read before `zipfile` builds a ZipInfo per entry.

    `zipfile` parses the whole directory whatever the end record declares, so a 10 MiB upload
    could make it build ~200k objects; counting header signatures in the directory bounds that
    (an overcount only makes the check stricter). None when there is no end record.
    """
    pos = data.rfind(b"PK\x05\x06", max(0, len(data) - _EOCD.size - 0xFFFF))
    if pos < 0 or pos + _EOCD.size > len(data):
        return None
    *_, declared, cd_size, _cd_offset, _comment = _EOCD.unpack_from(data, pos)
    end = pos
    locator = pos - _EOCD64_LOCATOR.size
    record = locator - _EOCD64_SIZE  # zipfile expects the zip64 record right before it
    if record >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        if data[record : record + 4] == b"PK\x06\x06":
            end = record
            declared, cd_size = struct.unpack_from("<QQ", data, record + 32)
    counted = data.count(_CENTRAL_HEADER, max(0, end - cd_size), end)
    return max(int(declared), counted)
