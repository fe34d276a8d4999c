"""A local header must agree with the central directory: name, method, sizes, CRC, flags."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import pytest

from chat_shell.packages import PackageReadError, open_package
from tests.support.zipcraft import RawEntry, local_header, make_zip, patch_local_header, raw_zip

MD = b"---\nname: demo\ndescription: A demo skill.\n---\nDo it.\n"
HONEST = make_zip({"demo/SKILL.md": MD, "demo/tool.py": b"print('hi')\n" * 50})


def refused(data: bytes) -> PackageReadError:
    with pytest.raises(PackageReadError) as info:
        open_package(data)  # no inflating needed: the headers alone disagree
    return info.value


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"new_name": "demo/evil.py"}, "name"),
        ({"method": zipfile.ZIP_STORED}, "method"),
        ({"compressed_size": 1}, "compressed_size"),
        ({"size": 10**6}, "size"),
        ({"crc": 1234}, "crc"),
        ({"flags": 0x801}, "flags"),
    ],
)
def test_a_local_header_disagreeing_with_the_central_directory_is_refused(
    changes: dict[str, int | str], field: str
) -> None:
    err = refused(patch_local_header(HONEST, "demo/tool.py", **changes))  # type: ignore[arg-type]
    assert (err.code, err.details["entry"], err.details["field"]) == (
        "local_header_mismatch",
        "demo/tool.py",
        field,
    )


def test_with_a_data_descriptor_zero_local_sizes_defer_to_the_central_directory() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(_Unseekable(buf), "w", zipfile.ZIP_DEFLATED) as zf:  # streams: bit 3
        for name, content in (("demo/SKILL.md", MD), ("demo/a.txt", b"abc" * 100)):
            with zf.open(name, "w") as out:
                out.write(content)
    data = buf.getvalue()
    assert all(i.flag_bits & 0x08 for i in zipfile.ZipFile(io.BytesIO(data)).infolist())
    assert open_package(data, verify=True).read("a.txt") == b"abc" * 100
    # The bit excuses zeros only: a wrong non-zero size still disagrees.
    err = refused(patch_local_header(data, "demo/a.txt", size=7))
    assert (err.code, err.details["field"]) == ("local_header_mismatch", "size")


def test_zip64_local_sizes_are_read_from_their_extra_field() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in (("demo/SKILL.md", MD), ("demo/a.txt", b"abc" * 100)):
            with zf.open(name, "w", force_zip64=True) as out:
                out.write(content)
    data = buf.getvalue()
    assert open_package(data, verify=True).read("a.txt") == b"abc" * 100
    # Drop the zip64 extra's id: the local header then marks zip64 sizes but carries none.
    tampered = data.replace(b"\x01\x00\x10\x00", b"\x99\x99\x10\x00", 1)
    assert refused(tampered).details["field"] == "size"


def test_an_offset_without_a_local_header_is_refused() -> None:
    data = bytearray(HONEST)
    offset = zipfile.ZipFile(io.BytesIO(HONEST)).getinfo("demo/tool.py").header_offset
    data[offset : offset + 4] = b"XXXX"
    err = refused(bytes(data))
    assert (err.code, err.details["entry"]) == ("local_header_mismatch", "demo/tool.py")


def test_an_entry_hidden_inside_another_entrys_data_is_refused() -> None:
    # demo/a.bin's stored bytes are a whole local header and data of demo/b.txt, which the
    # central directory lists too: two readers could disagree on what the archive holds.
    inner = local_header(b"demo/b.txt", b"same", size=4, crc=zlib.crc32(b"same"), method=0)
    inner += b"same"
    a_data = len(local_header(b"demo/SKILL.md", MD, size=len(MD), crc=0, method=0)) + len(MD)
    a_data += len(local_header(b"demo/a.bin", b"", size=0, crc=0, method=0))
    data = raw_zip(
        [
            RawEntry("demo/SKILL.md", MD),
            RawEntry("demo/a.bin", inner),
            RawEntry("demo/b.txt", b"same", offset=a_data, write_local=False),
        ]
    )
    assert zipfile.ZipFile(io.BytesIO(data)).read("demo/b.txt") == b"same"  # zipfile reads it
    err = refused(data)
    assert (err.code, err.details["entry"], err.details["overlaps"]) == (
        "local_header_mismatch",
        "demo/b.txt",
        "demo/a.bin",
    )


def test_data_running_into_the_central_directory_is_refused() -> None:
    data = raw_zip([RawEntry("demo/SKILL.md", MD)])
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("demo/SKILL.md")
    # Claim a bigger compressed size in both headers: the data would overrun the directory.
    central = data.index(b"PK\x01\x02")
    out = bytearray(
        patch_local_header(data, "demo/SKILL.md", compressed_size=info.compress_size + 40)
    )
    struct.pack_into("<L", out, central + 20, info.compress_size + 40)
    err = refused(bytes(out))
    assert (err.code, err.details["reason"]) == (
        "local_header_mismatch",
        "its data runs past the start of the central directory",
    )


class _Unseekable(io.RawIOBase):
    def __init__(self, target: io.BytesIO) -> None:
        self.target = target

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return self.target.write(data)
