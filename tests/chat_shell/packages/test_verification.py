"""Every entry is inflated once, bounded: real sizes and CRCs must be what the headers say."""

from __future__ import annotations

import random
import zipfile
import zlib

import pytest

from chat_shell.packages import PackageReadError, open_package
from chat_shell.packages._entry_data import OUT_CHUNK
from tests.support.zipcraft import MiB, RawEntry, deflated_zeros, make_zip, raw_zip

MD = b"---\nname: demo\ndescription: A demo skill.\n---\nDo it.\n"
SKILL = RawEntry("demo/SKILL.md", MD)


def deflated(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def refused(entries: list[RawEntry]) -> PackageReadError:
    with pytest.raises(PackageReadError) as info:
        open_package(raw_zip(entries), verify=True)
    return info.value


def test_an_honest_archive_verifies_and_reads_back_exactly() -> None:
    files = {"demo/SKILL.md": MD, "demo/data.bin": bytes(range(256)) * 4000, "demo/empty": b""}
    package = open_package(make_zip(files), verify=True)
    assert {p: f.size for p, f in package.files.items()} == {
        "SKILL.md": len(MD),
        "data.bin": 1_024_000,
        "empty": 0,
    }
    assert package.read("data.bin") == files["demo/data.bin"]
    assert package.read_all() == {p.removeprefix("demo/"): b for p, b in files.items()}


def test_an_entry_claiming_100_bytes_that_inflates_to_64_mib_stops_one_byte_past_its_claim() -> (
    None
):
    payload, _ = deflated_zeros(64 * MiB)
    liar = RawEntry("demo/a.bin", payload, 100, zlib.crc32(bytes(100)), zipfile.ZIP_DEFLATED)
    err = refused([SKILL, liar])
    assert err.code == "entry_size_mismatch"
    assert err.details == {
        "entry": "demo/a.bin",
        "declared": 100,
        "found": 101,
        "found_at_least": True,
    }


def test_a_large_lie_is_caught_at_the_first_chunk_past_the_claim() -> None:
    payload, _ = deflated_zeros(64 * MiB)
    declared = 3 * OUT_CHUNK + 7
    liar = RawEntry("demo/a.bin", payload, declared, 0, zipfile.ZIP_DEFLATED)
    err = refused([SKILL, liar])
    assert (err.code, err.details["found"]) == ("entry_size_mismatch", declared + 1)


def test_an_entry_inflating_to_less_than_its_claim_is_refused() -> None:
    short = RawEntry("demo/a.txt", deflated(b"hello"), 50, zlib.crc32(b"hello"), 8)
    err = refused([SKILL, short])
    assert (err.code, err.details["declared"], err.details["found"]) == (
        "entry_size_mismatch",
        50,
        5,
    )


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_an_entry_whose_bytes_do_not_match_its_crc_is_refused(method: int) -> None:
    payload = b"hello" if method == zipfile.ZIP_STORED else deflated(b"hello")
    bad = RawEntry("demo/a.txt", payload, 5, zlib.crc32(b"hellO"), method)
    err = refused([SKILL, bad])
    assert err.code == "entry_crc_mismatch"
    assert err.details == {
        "entry": "demo/a.txt",
        "declared": f"{zlib.crc32(b'hellO'):08x}",
        "computed": f"{zlib.crc32(b'hello'):08x}",
    }


def test_a_stored_entry_whose_data_is_not_its_size_is_refused() -> None:
    err = refused([SKILL, RawEntry("demo/a.txt", b"abc", file_size=4)])
    assert (err.code, err.details["found"]) == ("entry_size_mismatch", 3)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (deflated(b"hello world")[:-3], "its deflate data ends early"),
        (deflated(b"hello world") + b"junk", "bytes follow the end of its deflate data"),
        (b"\xff\xff\xff\xff", "its deflate data is invalid"),
    ],
)
def test_deflate_data_that_is_cut_padded_or_invalid_is_corrupt(payload: bytes, reason: str) -> None:
    entry = RawEntry("demo/a.txt", payload, 11, zlib.crc32(b"hello world"), zipfile.ZIP_DEFLATED)
    err = refused([SKILL, entry])
    assert (err.code, err.details["entry"]) == ("corrupt_entry", "demo/a.txt")
    assert err.details["reason"].startswith(reason)


def test_ignored_and_outside_entries_are_verified_too() -> None:
    for name in ("__MACOSX/demo/._x", "demo/.hidden", "elsewhere.txt"):
        err = refused([SKILL, RawEntry(name, b"abc", crc=7)])
        assert (err.code, err.details["entry"]) == ("entry_crc_mismatch", name)


def test_without_verify_only_the_file_read_is_checked() -> None:
    data = raw_zip([SKILL, RawEntry("demo/a.txt", b"abc", crc=7), RawEntry("demo/b.txt", b"ok")])
    package = open_package(data)  # what the file API and the engine do with stored packages
    assert package.read("b.txt") == b"ok"
    with pytest.raises(PackageReadError) as info:
        package.read("a.txt")
    assert info.value.code == "entry_crc_mismatch"


def test_reads_are_bounded_by_what_the_caller_allows() -> None:
    package = open_package(make_zip({"demo/SKILL.md": MD, "demo/big.txt": b"x" * 1000}))
    assert package.read("big.txt", max_bytes=1000) == b"x" * 1000
    with pytest.raises(PackageReadError) as info:
        package.read("big.txt", max_bytes=999)
    assert info.value.code == "file_too_large"
    assert info.value.details == {
        "entry": "demo/big.txt",
        "path": "big.txt",
        "size": 1000,
        "limit": 999,
    }


@pytest.mark.parametrize("path", ["missing.txt", "../demo/SKILL.md", "demo/SKILL.md", ".env", ""])
def test_only_the_exact_paths_of_package_files_resolve(path: str) -> None:
    package = open_package(make_zip({"demo/SKILL.md": MD, "demo/.env": b"SECRET=1"}))
    with pytest.raises(PackageReadError) as info:
        package.read(path)
    assert (info.value.code, info.value.details["path"]) == ("file_not_found", path)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_range_is_the_slice_of_the_whole_file(method: int) -> None:
    data = random.Random(7).randbytes(1_300_000)  # several inflate chunks, under the ratio cap
    payload = data if method == zipfile.ZIP_STORED else deflated(data)
    entry = RawEntry("demo/data.bin", payload, len(data), zlib.crc32(data), method)
    package = open_package(raw_zip([SKILL, entry]))
    edges = [0, 1, OUT_CHUNK - 1, OUT_CHUNK, OUT_CHUNK + 1, len(data) - 1, len(data)]
    for start in edges:
        for stop in (*edges, len(data) + 10):
            assert package.read_range("data.bin", start, stop) == data[start:stop]


def test_a_range_reaching_the_end_checks_the_crc_and_one_before_it_cannot() -> None:
    data = b"x" * (3 * OUT_CHUNK)
    bad = RawEntry("demo/a.txt", deflated(data), len(data), zlib.crc32(b"other"), 8)
    package = open_package(raw_zip([SKILL, bad]))  # unverified: as a stored package is read
    assert package.read_range("a.txt", 0, 10) == b"x" * 10  # the CRC covers the whole file
    for stop in (len(data), len(data) + 1):
        with pytest.raises(PackageReadError) as info:
            package.read_range("a.txt", len(data) - 5, stop)
        assert info.value.code == "entry_crc_mismatch"


def test_a_range_inflates_no_further_than_its_end() -> None:
    """A lie past the range is not reached (nothing is inflated there), one inside it is."""
    payload, _ = deflated_zeros(64 * MiB)
    declared = 4 * OUT_CHUNK
    liar = RawEntry("demo/a.bin", payload, declared, 0, zipfile.ZIP_DEFLATED)
    package = open_package(raw_zip([SKILL, liar]))
    assert package.read_range("a.bin", 5, 20) == bytes(15)
    with pytest.raises(PackageReadError) as info:
        package.read_range("a.bin", 0, declared + 1)
    assert info.value.code == "entry_size_mismatch"
