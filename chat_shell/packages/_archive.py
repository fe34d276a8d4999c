"""Archive safety: a ZIP is hostile until its central directory and local headers passed.

`open_archive` checks every entry's central directory record (names, types, declared sizes and
ratios, caps) and its local header against it, without decompressing anything: about the cost
of opening the archive with `zipfile`. `SafeArchive.verify` then inflates every entry once,
as a bounded stream, to prove the declared sizes and CRCs (uploads do this before storing);
`SafeArchive.read` reads one entry through the same bounded, checked stream.
"""

from __future__ import annotations

import io
import re
import stat
import struct
import zipfile
from dataclasses import dataclass

from chat_shell.packages._entry_data import EntryData, inflate, inflate_range, local_data_offset
from chat_shell.packages._errors import PackageReadError, ReadCode
from chat_shell.packages.limits import ArchiveLimits

MAX_ENTRY_NAME_LENGTH = 1024  # bounds the file list stored with a package
DEFAULT_MODE = 0o644  # archives made on Windows carry no Unix mode
_SUPPORTED_COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class ArchiveEntry(EntryData):
    """An entry of a checked archive; `mode` is None for a directory."""

    mode: int | None = None
    header_offset: int = 0

    @property
    def is_dir(self) -> bool:
        return self.mode is None


class SafeArchive:
    """A ZIP whose central directory and local headers passed `open_archive`."""

    def __init__(self, data: bytes, entries: list[ArchiveEntry]) -> None:
        self._data = data
        self.all_entries = entries
        self.entries = [e for e in entries if not e.is_dir]  # the regular files

    def read(self, entry: ArchiveEntry) -> bytes:
        """The entry's bytes: never more than its declared size, refused if they differ from
        it or from its CRC."""
        return inflate(self._data, entry, keep=True)

    def read_range(self, entry: ArchiveEntry, start: int, stop: int) -> bytes:
        """Bytes [start, stop) of the entry, inflating no further (see `inflate_range`)."""
        return inflate_range(self._data, entry, start, stop)

    def verify(self) -> None:
        """Inflate every entry once (nothing kept): real sizes and CRCs must match the headers.

        Each stream stops one byte past its entry's declared size, and the declared sizes
        already passed the total and ratio caps: so the caps hold for the real bytes too, and a
        lying header costs at most what an honest one may."""
        for entry in self.all_entries:
            inflate(self._data, entry, keep=False)


def check_archive_size(size: int, limits: ArchiveLimits) -> None:
    """`archive_too_large` for an archive over the cap (hosts call it while receiving too)."""
    if size > limits.max_archive_bytes:
        raise PackageReadError(
            ReadCode.ARCHIVE_TOO_LARGE,
            f"archive is larger than {limits.max_archive_bytes} bytes",
            limit=limits.max_archive_bytes,
        )


def open_archive(data: bytes, limits: ArchiveLimits) -> SafeArchive:
    """Check every entry of the central directory, and its local header, in one pass."""
    check_archive_size(len(data), limits)
    declared = central_directory_entries(data)
    if declared is None:
        raise PackageReadError(
            ReadCode.NOT_A_ZIP, "not a ZIP archive (no end of central directory)"
        )
    _check_entry_count(declared, limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            directory_start = zf.start_dir
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise PackageReadError(ReadCode.NOT_A_ZIP, f"not a readable ZIP archive: {exc}") from exc
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
            raise _too_large(name, limits)
        mode = _regular_mode(info, name)
        offset = local_data_offset(data, info, name, directory_start)
        entries.append(
            ArchiveEntry(
                name=name,
                method=info.compress_type,
                data_offset=offset,
                compressed_size=info.compress_size,
                size=info.file_size,
                crc=info.CRC,
                mode=mode,
                header_offset=info.header_offset,
            )
        )
    _check_no_overlap(entries)
    _check_tree(seen)
    return SafeArchive(data, entries)


def _too_large(name: str, limits: ArchiveLimits) -> PackageReadError:
    return PackageReadError(
        ReadCode.UNCOMPRESSED_TOO_LARGE,
        f"entries add up to more than {limits.max_uncompressed_bytes} bytes "
        f"uncompressed (reached at {name!r})",
        entry=name,
        limit=limits.max_uncompressed_bytes,
    )


def _check_entry_count(count: int, limits: ArchiveLimits) -> None:
    if count > limits.max_archive_entries:
        raise PackageReadError(
            ReadCode.TOO_MANY_ENTRIES,
            f"archive has {count} entries, at most {limits.max_archive_entries} are allowed",
            count=count,
            limit=limits.max_archive_entries,
        )


def _check_no_overlap(entries: list[ArchiveEntry]) -> None:
    """Two entries sharing bytes would let one archive read differently to different readers
    (and multiply a small payload); each entry's data must end before the next header."""
    ordered = sorted(entries, key=lambda e: e.header_offset)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if before.data_offset + before.compressed_size > after.header_offset:
            raise PackageReadError(
                ReadCode.LOCAL_HEADER_MISMATCH,
                f"entry {after.name!r} overlaps the data of {before.name!r}",
                entry=after.name,
                reason="overlapping entries",
                overlaps=before.name,
            )


def path_problem(name: str) -> str | None:
    """Why `name` is not a safe relative POSIX path inside an archive, or None."""
    if not name:
        return "empty name"
    if len(name) > MAX_ENTRY_NAME_LENGTH:
        return f"name longer than {MAX_ENTRY_NAME_LENGTH} characters"
    if "\x00" in name:
        return "NUL byte in name"
    if not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: bytes a reader kept with surrogateescape
            return "name is not UTF-8"
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


def shown_name(name: str) -> str:
    """`name` as text any encoder takes, for messages and error details: tarfile and `os`
    keep bytes that are not UTF-8 as lone surrogates (shown as the bytes, `\\xe9`), which a
    JSON answer cannot encode."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate surrogateescape did not make
        return name.encode("utf-8", "backslashreplace").decode()
    return raw.decode("utf-8", "backslashreplace")


def _check_name(name: str, seen: set[str]) -> None:
    problem = path_problem(name)
    if problem is not None:
        raise PackageReadError(
            ReadCode.UNSAFE_PATH,
            f"unsafe entry name {name!r}: {problem}",
            entry=name,
            reason=problem,
        )
    if name in seen:
        raise PackageReadError(ReadCode.DUPLICATE_ENTRY, f"duplicate entry {name!r}", entry=name)
    seen.add(name)


def _check_tree(names: set[str]) -> None:
    """No path is both a file and a folder (`a` beside `a/b`): unpacked, one of them could not
    be written, and which one is lost would depend on the order."""
    files = {n for n in names if not n.endswith("/")}
    for name in sorted(names):
        parts = name.removesuffix("/").split("/")
        # a folder entry's own path too: `a` beside `a/`
        for depth in range(1, len(parts) + name.endswith("/")):
            folder = "/".join(parts[:depth])
            if folder in files:
                raise PackageReadError(
                    ReadCode.DUPLICATE_ENTRY,
                    f"{folder!r} is a file and a folder (of {name!r})",
                    entry=folder,
                    reason="a file and a folder of the same path",
                )


def _check_storage(info: zipfile.ZipInfo, name: str, limits: ArchiveLimits) -> None:
    if info.flag_bits & 0x1:
        raise PackageReadError(ReadCode.ENCRYPTED_ENTRY, f"entry {name!r} is encrypted", entry=name)
    if info.compress_type not in _SUPPORTED_COMPRESSION:
        raise PackageReadError(
            ReadCode.UNSUPPORTED_COMPRESSION,
            f"entry {name!r} uses compression method {info.compress_type}; "
            f"only {' and '.join(_SUPPORTED_COMPRESSION.values())} are supported",
            entry=name,
            method=info.compress_type,
        )
    size = info.file_size
    ratio = size / max(info.compress_size, 1)
    if size > limits.compression_ratio_min_bytes and ratio > limits.max_compression_ratio:
        raise PackageReadError(
            ReadCode.COMPRESSION_RATIO_EXCEEDED,
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
        raise PackageReadError(ReadCode.SYMLINK_ENTRY, f"entry {name!r} is a symlink", entry=name)
    is_dir = name.endswith("/")
    if kind not in (0, stat.S_IFDIR if is_dir else stat.S_IFREG):
        raise PackageReadError(
            ReadCode.NON_REGULAR_ENTRY,
            f"entry {name!r} is not a regular file (file type {kind:o})",
            entry=name,
        )
    if is_dir:
        if info.file_size or info.compress_size:  # a folder holding bytes reads two ways
            raise PackageReadError(
                ReadCode.NON_REGULAR_ENTRY, f"folder entry {name!r} holds data", entry=name
            )
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
