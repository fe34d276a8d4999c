"""Build skill archives in memory, including hostile ones, for API tests."""

from __future__ import annotations

import io
import stat
import warnings
import zipfile
import zlib

SKILL_MD = (
    "---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nDo the thing.\n"
)


def skill_md(name: str = "demo", description: str = "A demo skill.", extra: str = "") -> str:
    return SKILL_MD.format(name=name, description=description, extra=extra)


def build(entries: dict[str, bytes | str], *, folder: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in entries.items():
            path = f"{folder}/{name}" if folder else name
            info = zipfile.ZipInfo(path)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, content)
    return buf.getvalue()


def skill(
    name: str = "demo",
    *,
    description: str = "A demo skill.",
    extra: str = "",
    files: dict[str, bytes | str] | None = None,
) -> bytes:
    return build({"SKILL.md": skill_md(name, description, extra), **(files or {})}, folder=name)


def with_symlink() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("demo/SKILL.md", skill_md())
        link = zipfile.ZipInfo("demo/link")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    return buf.getvalue()


def with_entry(name: str) -> bytes:
    return build({"demo/SKILL.md": skill_md(), name: "x"})


def with_duplicate() -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate we want
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("demo/SKILL.md", skill_md())
            zf.writestr("demo/a.txt", "one")
            zf.writestr("demo/a.txt", "two")
    return buf.getvalue()


def with_many_entries(count: int) -> bytes:
    return build(
        {"SKILL.md": skill_md(), **{f"f{i}.txt": "" for i in range(count - 1)}}, folder="demo"
    )


def bomb(uncompressed: int = 200 * 1024 * 1024) -> bytes:
    """A ~200 KiB entry that inflates to `uncompressed` zero bytes, built without allocating it."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(uncompressed // len(block))]
    parts.append(compressor.flush())
    payload = b"".join(parts)
    crc = 0
    for _ in range(uncompressed // len(block)):
        crc = zlib.crc32(block, crc)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo/SKILL.md", skill_md())
        info = zipfile.ZipInfo("demo/bomb.bin")
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        # Write the pre-compressed stream with correct sizes and CRC by hand.
        info.file_size, info.compress_size, info.CRC = uncompressed, len(payload), crc
        info.header_offset = buf.tell()
        buf.write(info.FileHeader(zip64=False))
        buf.write(payload)
        zf.start_dir = buf.tell()
        zf.filelist.append(info)
        zf.NameToInfo[info.filename] = info
    return buf.getvalue()


def _with_raw_entry(
    name: str, payload: bytes, *, size: int, crc: int, local_name: str | None = None
) -> bytes:
    """`demo/SKILL.md` plus one deflated entry whose headers say what the caller wants."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo/SKILL.md", skill_md())
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        info.file_size, info.compress_size, info.CRC = size, len(payload), crc
        info.header_offset = buf.tell()
        header = info.FileHeader(zip64=False)
        if local_name is not None:  # same length: the header's name length stays right
            header = header.replace(name.encode(), local_name.encode())
        buf.write(header)
        buf.write(payload)
        zf.start_dir = buf.tell()
        zf.filelist.append(info)
        zf.NameToInfo[info.filename] = info
    return buf.getvalue()


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def size_liar(declared: int = 100, real: int = 64 * 1024 * 1024) -> bytes:
    """An entry whose headers claim `declared` bytes (and their CRC) but that inflates to
    `real` zero bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = bytes(1024 * 1024)
    parts = [compressor.compress(block) for _ in range(real // len(block))]
    parts.append(compressor.compress(bytes(real % len(block))) + compressor.flush())
    payload = b"".join(parts)
    return _with_raw_entry("demo/a.bin", payload, size=declared, crc=zlib.crc32(bytes(declared)))


def crc_liar() -> bytes:
    return _with_raw_entry("demo/a.txt", _deflate(b"hello"), size=5, crc=zlib.crc32(b"hellO"))


def local_name_liar() -> bytes:
    """The central directory lists `demo/a.txt`; its local header says `demo/b.txt`."""
    data = b"print('x')\n"
    return _with_raw_entry(
        "demo/a.txt", _deflate(data), size=len(data), crc=zlib.crc32(data), local_name="demo/b.txt"
    )
