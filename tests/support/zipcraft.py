"""Building archives for tests: honest ones with `zipfile`, hostile ones byte by byte.

`raw_zip` writes local headers, central directory and end record by hand, so a test can state
any name (NUL included), size, CRC, flag, method or file type that `zipfile` would not write.
"""

from __future__ import annotations

import io
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

MiB = 1024 * 1024
REGULAR = (stat.S_IFREG | 0o644) << 16


def skill_md(frontmatter: str, body: str = "Do the thing.\n") -> str:
    return f"---\n{frontmatter}\n---\n{body}"


def make_zip(files: dict[str, bytes | str], *, modes: dict[str, int] | None = None) -> bytes:
    """An honest archive; `modes` gives full `st_mode` values (file type bits included)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            mode = (modes or {}).get(name)
            info.external_attr = REGULAR if mode is None else mode << 16
            zf.writestr(info, content)
    return buf.getvalue()


def skill_zip(
    frontmatter: str = "name: demo\ndescription: A demo skill.", **extra: bytes | str
) -> bytes:
    """`demo/SKILL.md` plus files given as keyword arguments (`__` stands for `/`)."""
    files: dict[str, bytes | str] = {"demo/SKILL.md": skill_md(frontmatter)}
    files.update({"demo/" + k.replace("__", "/"): v for k, v in extra.items()})
    return make_zip(files)


@dataclass
class RawEntry:
    name: bytes | str
    payload: bytes = b""  # exactly the stored bytes (already compressed if method is deflate)
    file_size: int | None = None  # declared; defaults to len(payload)
    crc: int | None = None  # declared; defaults to the CRC of payload
    method: int = zipfile.ZIP_STORED
    external_attr: int = REGULAR
    flags: int = 0x800  # names are UTF-8
    offset: int | None = None  # where the central record says the local header is
    write_local: bool = True  # False: only a central record (pointing at `offset`)


def raw_zip(entries: Iterable[RawEntry], *, declared_count: int | None = None) -> bytes:
    out = bytearray()
    central = bytearray()
    count = 0
    for e in entries:
        count += 1
        name = e.name.encode() if isinstance(e.name, str) else e.name
        size = len(e.payload) if e.file_size is None else e.file_size
        crc = zlib.crc32(e.payload) if e.crc is None else e.crc
        offset = len(out) if e.offset is None else e.offset
        dos_date = (0 << 9) | (1 << 5) | 1  # 1980-01-01
        if e.write_local:
            out += local_header(name, e.payload, size=size, crc=crc, method=e.method, flags=e.flags)
            out += e.payload
        central += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", (3 << 8) | 20, 20, e.flags, e.method, 0, dos_date,
            crc, len(e.payload), size, len(name), 0, 0, 0, 0, e.external_attr, offset,
        )  # fmt: skip
        central += name
    n = count if declared_count is None else declared_count
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n, n, len(central), len(out), 0)
    return bytes(out + central + end)


def local_header(
    name: bytes, payload: bytes, *, size: int, crc: int, method: int, flags: int = 0x800
) -> bytes:
    dos_date = (0 << 9) | (1 << 5) | 1  # 1980-01-01
    return struct.pack(
        "<4s5H3L2H", b"PK\x03\x04", 20, flags, method, 0, dos_date, crc,
        len(payload), size, len(name), 0,
    ) + name  # fmt: skip


def deflated_zeros(total: int, chunk: int = MiB) -> tuple[bytes, int]:
    """Raw deflate of `total` zero bytes and their CRC, built a chunk at a time."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(chunk)
    parts, crc, left = [], 0, total
    while left:
        piece = zeros if left >= chunk else bytes(left)
        parts.append(comp.compress(piece))
        crc = zlib.crc32(piece, crc)
        left -= len(piece)
    parts.append(comp.flush())
    return b"".join(parts), crc


LOCAL_FIELDS = ("flags", "method", "crc", "compressed_size", "size")


def patch_local_header(
    data: bytes, name: str, *, new_name: str | None = None, **fields: int
) -> bytes:
    """`data` with the local header of entry `name` changed (central directory untouched):
    `fields` among LOCAL_FIELDS; `new_name` must have the same length as the old one."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    at = info.header_offset
    layout = struct.Struct("<4s5H3L2H")
    values = list(layout.unpack_from(data, at))
    index = {"flags": 2, "method": 3, "crc": 6, "compressed_size": 7, "size": 8}
    for key, value in fields.items():
        values[index[key]] = value
    out = bytearray(data)
    layout.pack_into(out, at, *values)
    if new_name is not None:
        raw = new_name.encode()
        assert len(raw) == values[9], "the new name must keep the length"
        out[at + layout.size : at + layout.size + len(raw)] = raw
    return bytes(out)
