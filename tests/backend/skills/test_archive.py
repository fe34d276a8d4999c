"""Archive safety through backend's reader: one test per rule, each checking the code, the
status and the named entry (the rules themselves live in chat_shell/packages)."""

from __future__ import annotations

import io
import random
import stat
import warnings
import zipfile
import zlib

import pytest

from backend.skills.errors import ErrorCode, PackageError, translated
from backend.skills.limits import ArchiveLimits
from backend.skills.package import read_package, read_package_file
from chat_shell import PackageReadError, ReadCode
from tests.support.zipcraft import (
    MiB,
    RawEntry,
    deflated_zeros,
    make_zip,
    raw_zip,
    skill_md,
    skill_zip,
)

GOOD_MD = skill_md("name: demo\ndescription: A demo skill.").encode()
LIMITS = ArchiveLimits()


def refused(data: bytes, limits: ArchiveLimits = LIMITS) -> PackageError:
    with pytest.raises(PackageError) as info:
        read_package(data, limits=limits)
    return info.value


@pytest.mark.parametrize("data", [b"", b"hello, not a zip", skill_zip()[:-30], b"PK\x05\x06"])
def test_bytes_that_are_not_a_zip_are_refused(data: bytes) -> None:
    err = refused(data)
    assert (err.code, err.status_code) == ("not_a_zip", 422)


def test_an_archive_over_the_size_cap_is_413() -> None:
    data = skill_zip(big=bytes(range(256)) * 64)
    err = refused(data, ArchiveLimits(max_archive_bytes=len(data) - 1))
    assert (err.code, err.status_code) == ("archive_too_large", 413)
    assert err.details["limit"] == len(data) - 1


def test_1001_entries_are_too_many() -> None:
    files: dict[str, bytes | str] = {f"demo/f{i}.txt": b"" for i in range(1000)}
    data = make_zip({"demo/SKILL.md": GOOD_MD, **files})
    err = refused(data)
    assert (err.code, err.status_code) == ("too_many_entries", 422)
    assert err.details == {"count": 1001, "limit": 1000}


def test_an_end_record_understating_the_entry_count_does_not_hide_entries() -> None:
    entries = [RawEntry("demo/SKILL.md", GOOD_MD)] + [RawEntry(f"demo/{i}") for i in range(1000)]
    err = refused(raw_zip(entries, declared_count=1))
    assert err.code == "too_many_entries"
    assert err.details["count"] == 1001


def test_1000_entries_are_accepted() -> None:
    files: dict[str, bytes | str] = {f"demo/f{i}.txt": b"" for i in range(999)}
    package = read_package(make_zip({"demo/SKILL.md": GOOD_MD, **files}))
    assert len(package.files) == 1000


def test_a_deflate_bomb_of_200_mib_is_refused_by_its_ratio() -> None:
    payload, crc = deflated_zeros(200 * MiB)
    assert len(payload) < 250 * 1024
    bomb = RawEntry("demo/zeros.bin", payload, 200 * MiB, crc, zipfile.ZIP_DEFLATED)
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), bomb]))
    assert (err.code, err.status_code) == ("compression_ratio_exceeded", 422)
    assert err.details["entry"] == "demo/zeros.bin"
    assert err.details["ratio"] > 100


def test_a_1_kib_archive_declaring_200_mib_is_refused() -> None:
    liar = RawEntry("demo/big.bin", bytes(512), file_size=200 * MiB)
    data = raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), liar])
    assert len(data) < 1024
    err = refused(data)
    assert (err.code, err.details["entry"]) == ("compression_ratio_exceeded", "demo/big.bin")


def test_small_entries_may_compress_well() -> None:
    package = read_package(skill_zip(zeros=bytes(MiB)))  # ratio ~1000, but only 1 MiB
    assert {f.path: f.size for f in package.files}["zeros"] == MiB


def test_entries_adding_up_over_the_uncompressed_cap_are_refused() -> None:
    parts = [
        RawEntry(f"demo/part{i}", bytes(400 * 1024), file_size=30 * MiB) for i in range(4)
    ]  # each expands 75x: under the ratio cap
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), *parts]))
    assert (err.code, err.status_code) == ("uncompressed_too_large", 422)
    assert err.details["entry"] == "demo/part3"


UNSAFE_NAMES = [
    ("../x", "'..' segment"),
    ("demo/../../x", "'..' segment"),
    ("/etc/passwd", "absolute path"),
    ("C:/Windows/x", "drive letter"),
    ("c:x", "drive letter"),
    ("demo\\..\\x", "backslash in name"),
    ("demo/a:b", "':' in name"),
    ("demo/a\x00.txt", "NUL byte in name"),
    ("demo/a\nb", "control character in name"),
    ("./demo/x", "empty or '.' segment"),
    ("demo//x", "empty or '.' segment"),
    ("demo/" + "a" * 1100, "name longer than 1024 characters"),
]


@pytest.mark.parametrize(("name", "reason"), UNSAFE_NAMES)
def test_unsafe_entry_names_are_refused(name: str, reason: str) -> None:
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), RawEntry(name, b"x")]))
    assert (err.code, err.status_code) == ("unsafe_path", 422)
    assert err.details["entry"] == name
    assert err.details["reason"] == reason


def test_a_symlink_entry_is_refused_not_skipped() -> None:
    link = RawEntry("demo/link", b"/etc/passwd", external_attr=0o120777 << 16)
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), link]))
    assert (err.code, err.status_code, err.details["entry"]) == ("symlink_entry", 422, "demo/link")


@pytest.mark.parametrize(
    ("name", "file_type"),
    [
        ("demo/fifo", stat.S_IFIFO),
        ("demo/dev", stat.S_IFCHR),
        ("demo/dir-without-slash", stat.S_IFDIR),
    ],
)
def test_non_regular_entries_are_refused(name: str, file_type: int) -> None:
    odd = RawEntry(name, b"", external_attr=(file_type | 0o644) << 16)
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), odd]))
    assert (err.code, err.details["entry"]) == ("non_regular_entry", name)


def test_duplicate_entry_names_are_refused() -> None:
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore")  # zipfile warns when it writes a duplicate name
        for name, content in [
            ("demo/SKILL.md", GOOD_MD),
            ("demo/a.txt", b"1"),
            ("demo/a.txt", b"2"),
        ]:
            zf.writestr(name, content)
    err = refused(buf.getvalue())
    assert (err.code, err.status_code) == ("duplicate_entry", 422)
    assert err.details["entry"] == "demo/a.txt"


def test_encrypted_entries_are_refused() -> None:
    secret = RawEntry("demo/secret.txt", b"xxxxxxxxxxxx", flags=0x801)
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), secret]))
    assert (err.code, err.details["entry"]) == ("encrypted_entry", "demo/secret.txt")


def test_compression_methods_other_than_deflate_are_refused() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("demo/SKILL.md", GOOD_MD)
        zf.writestr("demo/notes.txt", b"text", compress_type=zipfile.ZIP_BZIP2)
    err = refused(buf.getvalue())
    assert (err.code, err.details["entry"]) == ("unsupported_compression", "demo/notes.txt")


def test_a_skill_md_over_its_cap_is_refused() -> None:
    big = GOOD_MD + random.Random(0).randbytes(MiB)  # incompressible: under the ratio cap
    err = refused(make_zip({"demo/SKILL.md": big}))
    assert (err.code, err.status_code, err.details["entry"]) == (
        "skill_md_too_large",
        422,
        "demo/SKILL.md",
    )


def test_a_skill_md_that_is_not_utf8_is_refused() -> None:
    err = refused(make_zip({"demo/SKILL.md": GOOD_MD + b"\xff\xfe caf\xe9"}))
    assert (err.code, err.status_code, err.details["entry"]) == (
        "invalid_utf8",
        422,
        "demo/SKILL.md",
    )
    assert err.details["offset"] == len(GOOD_MD)


def test_an_entry_whose_data_does_not_match_its_crc_is_refused() -> None:
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), RawEntry("demo/a", b"x", crc=1)]))
    assert (err.code, err.status_code, err.details["entry"]) == (
        "entry_crc_mismatch",
        422,
        "demo/a",
    )


def test_a_header_understating_the_data_is_refused_at_upload_and_when_read() -> None:
    # The stream really inflates to 200 MiB; the headers say 1 KiB (with the CRC of 1 KiB of
    # zeros). Inflating stops one byte past the claim: the lie costs nothing and stores nothing.
    payload, _ = deflated_zeros(200 * MiB)
    liar = RawEntry("demo/data.bin", payload, 1024, zlib.crc32(bytes(1024)), zipfile.ZIP_DEFLATED)
    data = raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), liar])
    err = refused(data)
    assert (err.code, err.status_code) == ("entry_size_mismatch", 422)
    assert err.details == {
        "entry": "demo/data.bin",
        "declared": 1024,
        "found": 1025,
        "found_at_least": True,
    }
    assert _file_error(data, "data.bin").code == "entry_size_mismatch"


def test_a_header_overstating_the_data_is_refused() -> None:
    short = RawEntry("demo/data.bin", b"abc", file_size=10)
    data = raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), short])
    err = refused(data)
    assert (err.code, err.details["entry"], err.details["found"]) == (
        "entry_size_mismatch",
        "demo/data.bin",
        3,
    )
    assert _file_error(data, "data.bin").code == "entry_size_mismatch"


def _file_error(data: bytes, path: str) -> PackageError:
    with pytest.raises(PackageError) as info:
        read_package_file(data, path)
    return info.value


def test_regular_entries_keep_their_permission_bits() -> None:
    data = make_zip(
        {"demo/SKILL.md": GOOD_MD, "demo/run.sh": "#!/bin/sh\n", "demo/suid": "x"},
        modes={"demo/run.sh": stat.S_IFREG | 0o755, "demo/suid": stat.S_IFREG | 0o4755},
    )
    modes = {f.path: f.mode for f in read_package(data).files}
    assert modes == {"SKILL.md": 0o644, "run.sh": 0o755, "suid": 0o755}  # setuid dropped


def test_entries_without_a_unix_mode_get_0o644() -> None:
    data = raw_zip([RawEntry("demo/SKILL.md", GOOD_MD, external_attr=0x20)])  # MS-DOS archive bit
    assert [f.mode for f in read_package(data).files] == [0o644]


def test_directory_entries_are_allowed_and_not_listed_as_files() -> None:
    data = raw_zip(
        [
            RawEntry("demo/", external_attr=(stat.S_IFDIR | 0o755) << 16),
            RawEntry("demo/SKILL.md", GOOD_MD),
        ]
    )
    assert [f.path for f in read_package(data).files] == ["SKILL.md"]


def test_ignored_entries_are_still_checked() -> None:
    link = RawEntry("__MACOSX/demo/._link", b"x", external_attr=0o120777 << 16)
    err = refused(raw_zip([RawEntry("demo/SKILL.md", GOOD_MD), link]))
    assert (err.code, err.details["entry"]) == ("symlink_entry", "__MACOSX/demo/._link")


@pytest.mark.parametrize("code", list(ReadCode))
def test_every_code_of_the_package_reader_has_the_same_code_in_the_api(code: ReadCode) -> None:
    """The reader (chat_shell) and the API (backend) keep their own enums, one per layer;
    `translated()` maps one onto the other by value, so a reader code missing here would be a
    500 instead of its 4xx."""
    with pytest.raises(PackageError) as caught, translated():
        raise PackageReadError(code, "refused", entry="x")
    assert caught.value.code == code.value == ErrorCode(code.value).value
    assert caught.value.details == {"entry": "x"} and caught.value.status_code in (404, 413, 422)


@pytest.mark.parametrize(
    ("files", "entry"),
    [
        ({"demo/a": b"file", "demo/a/b": b"under it"}, "demo/a"),
        ({"demo/x/a": b"file", "demo/x/a/b/c": b"deeper"}, "demo/x/a"),
    ],
    ids=["file beside its folder", "deeper"],
)
def test_a_path_that_is_a_file_and_a_folder_is_refused(files: dict[str, bytes], entry: str) -> None:
    # Unpacked into a workspace, one of the two could not be written.
    err = refused(make_zip({"demo/SKILL.md": GOOD_MD, **files}))
    assert (err.code, err.details["entry"]) == ("duplicate_entry", entry)


def test_a_folder_entry_holding_data_or_beside_a_file_of_its_path_is_refused() -> None:
    skill = RawEntry("demo/SKILL.md", GOOD_MD)
    folder = RawEntry("demo/d/", b"12345", external_attr=(stat.S_IFDIR | 0o755) << 16)
    err = refused(raw_zip([skill, folder]))
    assert (err.code, err.details["entry"]) == ("non_regular_entry", "demo/d/")
    empty = RawEntry("demo/a/", b"", external_attr=(stat.S_IFDIR | 0o755) << 16)
    err = refused(raw_zip([skill, RawEntry("demo/a", b"file"), empty]))
    assert (err.code, err.details["entry"]) == ("duplicate_entry", "demo/a")
