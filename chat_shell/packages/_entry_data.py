"""An entry's bytes checked against what the central directory says about them.

Archive headers are the uploader's claims. `local_data_offset` compares an entry's local
header with its central directory record (name, method, sizes, CRC) and finds where its data
starts; `inflate` decompresses the data as a bounded stream: it never produces more than one
byte past the declared size, and checks the real size and the CRC at the end. Reading a file
and verifying an upload are the same code.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Generator
from dataclasses import dataclass

from chat_shell.packages._errors import PackageReadError, ReadCode

LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature .. extra field length: 30 bytes
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ZIP64_EXTRA = 0x0001
_ZIP64_MARK = 0xFFFFFFFF
_DATA_DESCRIPTOR = 0x08  # flag bit 3: CRC and sizes follow the data (zero in the local header)
_ENCRYPTED = 0x01
IN_CHUNK = 64 * 1024  # compressed bytes fed to zlib per call
OUT_CHUNK = 256 * 1024  # most bytes zlib may produce per call


@dataclass(frozen=True)
class EntryData:
    """Where an entry's compressed bytes are and what they must inflate to."""

    name: str
    method: int
    data_offset: int
    compressed_size: int
    size: int  # declared uncompressed size
    crc: int


def local_data_offset(data: bytes, info: zipfile.ZipInfo, name: str, end: int) -> int:
    """Offset of the entry's data, after a local header that agrees with `info`; the data
    must end before `end` (the central directory)."""
    offset = info.header_offset
    if offset < 0 or offset + LOCAL_HEADER.size > end:
        raise _mismatch(name, "its local header lies outside the archive")
    (signature, _, flags, method, _, _, crc, csize, usize, name_len, extra_len) = (
        LOCAL_HEADER.unpack_from(data, offset)
    )
    if signature != _LOCAL_SIGNATURE:
        raise _mismatch(name, "no local header at its offset")
    start = offset + LOCAL_HEADER.size
    local_name = data[start : start + name_len]
    extra = data[start + name_len : start + name_len + extra_len]
    if local_name != _raw_name(info):
        raise _mismatch(name, f"the local header names it {_shown(local_name)}", field="name")
    if method != info.compress_type:
        raise _mismatch(name, f"the local header says method {method}", field="method")
    if (flags ^ info.flag_bits) & _ENCRYPTED:
        raise _mismatch(name, "the local header disagrees about encryption", field="flags")
    if csize == _ZIP64_MARK or usize == _ZIP64_MARK:
        usize, csize = _zip64_sizes(extra, name)
    described = flags & _DATA_DESCRIPTOR
    for field, local, central in (
        ("crc", crc, info.CRC),
        ("compressed_size", csize, info.compress_size),
        ("size", usize, info.file_size),
    ):
        if local != central and not (described and local == 0):
            raise _mismatch(
                name,
                f"its local header says {field} {local}, the central directory {central}",
                field=field,
            )
    data_offset = start + name_len + extra_len
    if data_offset + info.compress_size > end:
        raise _mismatch(name, "its data runs past the start of the central directory")
    return int(data_offset)


def inflate(data: bytes, entry: EntryData, *, keep: bool) -> bytes:
    """The entry's bytes (`b""` unless `keep`), after checking real size and CRC."""
    if not keep:
        for _ in _inflated(data, entry):
            pass
        return b""
    return b"".join(_inflated(data, entry))


def inflate_range(data: bytes, entry: EntryData, start: int, stop: int) -> bytes:
    """Bytes [start, stop) of the entry (cut at its end), inflating no further than `stop`:
    a page of a large file costs its offset in time and its length in memory, never the whole
    file. Every byte inflated passes the bounded stream's checks; the CRC covers the whole
    entry, so only a range reaching the end checks it (stored packages were verified whole
    when uploaded)."""
    parts: list[bytes] = []
    position = 0
    chunks = _inflated(data, entry)
    try:
        for chunk in chunks:
            end = position + len(chunk)
            if end > start and position < stop:
                parts.append(bytes(chunk[max(start - position, 0) : stop - position]))
            position = end
            if position >= stop and stop < entry.size:  # else on to the end and its checks
                break
    finally:
        chunks.close()  # stops inflating here; at the end the checks above already ran
    return b"".join(parts)


def _inflated(data: bytes, entry: EntryData) -> Generator[bytes | memoryview, None, None]:
    """The entry's bytes as chunks; its real size and CRC are checked after the last one."""
    raw = memoryview(data)[entry.data_offset : entry.data_offset + entry.compressed_size]
    if entry.method == zipfile.ZIP_STORED:
        if len(raw) != entry.size:
            raise _size_mismatch(entry, len(raw))
        _check_crc(entry, zlib.crc32(raw))  # no inflating: the check costs one pass, no copy
        yield raw
        return
    crc = real = fed = 0
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    pending: bytes | memoryview = b""
    while not inflater.eof:
        if not pending and fed < len(raw):
            pending, fed = raw[fed : fed + IN_CHUNK], fed + IN_CHUNK
        try:
            # At most one byte past the declared size: enough to catch a lie, never more.
            out = inflater.decompress(pending, min(OUT_CHUNK, entry.size - real + 1))
        except zlib.error as exc:
            raise _corrupt(entry.name, f"its deflate data is invalid ({exc})") from None
        real += len(out)
        if real > entry.size:
            raise _size_mismatch(entry, real, at_least=True)
        crc = zlib.crc32(out, crc)
        if out:
            yield out
        if not out and not pending:
            break  # input used up, no output left: the stream is cut short
        pending = inflater.unconsumed_tail
    if not inflater.eof:
        raise _corrupt(entry.name, "its deflate data ends early")
    if fed < len(raw) or pending or inflater.unused_data:
        raise _corrupt(entry.name, "bytes follow the end of its deflate data")
    if real != entry.size:
        raise _size_mismatch(entry, real)
    _check_crc(entry, crc)


def _raw_name(info: zipfile.ZipInfo) -> bytes:
    # zipfile decodes UTF-8 names when flag bit 11 is set and cp437 otherwise; both round-trip.
    encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
    return info.orig_filename.encode(encoding)


def _zip64_sizes(extra: bytes, name: str) -> tuple[int, int]:
    """(size, compressed size) from the local header's zip64 extra field."""
    pos = 0
    while pos + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, pos)
        if kind == _ZIP64_EXTRA and length >= 16:
            usize, csize = struct.unpack_from("<2Q", extra, pos + 4)
            return usize, csize
        pos += 4 + length
    raise _mismatch(name, "its local header marks zip64 sizes but carries none", field="size")


def _check_crc(entry: EntryData, crc: int) -> None:
    if crc != entry.crc:
        raise PackageReadError(
            ReadCode.ENTRY_CRC_MISMATCH,
            f"entry {entry.name!r} does not match its CRC (declared {entry.crc:08x}, "
            f"computed {crc:08x})",
            entry=entry.name,
            declared=f"{entry.crc:08x}",
            computed=f"{crc:08x}",
        )


def _size_mismatch(entry: EntryData, real: int, *, at_least: bool = False) -> PackageReadError:
    found = f"more than {entry.size}" if at_least else str(real)
    return PackageReadError(
        ReadCode.ENTRY_SIZE_MISMATCH,
        f"entry {entry.name!r} holds {found} bytes, its headers say {entry.size}",
        entry=entry.name,
        declared=entry.size,
        found=real,
        **({"found_at_least": True} if at_least else {}),
    )


def _mismatch(name: str, reason: str, **details: str) -> PackageReadError:
    return PackageReadError(
        ReadCode.LOCAL_HEADER_MISMATCH,
        f"entry {name!r}: {reason}",
        entry=name,
        reason=reason,
        **details,
    )


def _corrupt(name: str, reason: str) -> PackageReadError:
    return PackageReadError(
        ReadCode.CORRUPT_ENTRY, f"entry {name!r} is corrupt: {reason}", entry=name, reason=reason
    )


def _shown(raw: bytes) -> str:
    return repr(raw.decode("utf-8", "replace"))
