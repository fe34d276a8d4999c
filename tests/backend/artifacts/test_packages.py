"""An artifact becomes a skill ZIP: ZIPs as they are, tars re-packed under the reader's caps."""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import tracemalloc
import zipfile

import pytest

from backend.artifacts.packages import package_zip
from backend.skills.errors import PackageError
from backend.skills.limits import ArchiveLimits
from tests.support import zips


def tar_of(*members: tuple[tarfile.TarInfo, bytes], mode: str = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:  # type: ignore[call-overload]
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_a_zip_is_used_as_it_is() -> None:
    archive = zips.skill("demo")
    assert package_zip(archive, ArchiveLimits()) == archive


def test_a_gzipped_tar_of_a_folder_becomes_a_zip_of_its_files() -> None:
    data = tar_of(
        (entry("demo", tarfile.DIRTYPE), b""),
        (entry("demo/SKILL.md"), b"---\nname: demo\n---\n"),
        mode="w:gz",
    )

    with zipfile.ZipFile(io.BytesIO(package_zip(data, ArchiveLimits()))) as found:
        assert found.namelist() == ["demo/SKILL.md"]
        assert found.read("demo/SKILL.md") == b"---\nname: demo\n---\n"


@pytest.mark.parametrize(
    ("members", "code"),
    [
        ([(entry("a/SKILL.md", tarfile.SYMTYPE, "/etc/passwd"), b"")], "symlink_entry"),
        ([(entry("a/SKILL.md", tarfile.LNKTYPE, "a/x"), b"")], "symlink_entry"),
        ([(entry("a/fifo", tarfile.FIFOTYPE), b"")], "non_regular_entry"),
        ([(entry("../escape.md"), b"x")], "unsafe_path"),
        ([(entry("/abs.md"), b"x")], "unsafe_path"),
        ([(entry("a/x"), b"1"), (entry("a/x"), b"2")], "duplicate_entry"),
        ([(entry("a/caf\udce9"), b"x")], "unsafe_path"),  # bytes that are not UTF-8
    ],
)
def test_a_tar_breaking_an_upload_rule_is_refused_with_its_code(
    members: list[tuple[tarfile.TarInfo, bytes]], code: str
) -> None:
    with pytest.raises(PackageError) as refused:
        package_zip(tar_of(*members), ArchiveLimits())
    assert refused.value.code == code
    json.dumps(refused.value.details, ensure_ascii=False).encode()  # an answer can say it


def test_a_tar_over_the_entry_and_size_caps_is_refused() -> None:
    many = tar_of(*((entry(f"a/{n}"), b"x") for n in range(4)))
    big = tar_of((entry("a/big"), b"x" * 2000))

    with pytest.raises(PackageError) as entries:
        package_zip(many, ArchiveLimits(max_archive_entries=3))
    with pytest.raises(PackageError) as size:
        package_zip(big, ArchiveLimits(max_uncompressed_bytes=1000))

    assert (entries.value.code, size.value.code) == ("too_many_entries", "uncompressed_too_large")


def test_neither_a_zip_nor_a_tar_is_not_a_zip() -> None:
    with pytest.raises(PackageError) as refused:
        package_zip(b"just some words", ArchiveLimits())
    assert refused.value.code == "not_a_zip"


def header_bomb(size: int, kind: bytes) -> bytes:
    """A gzipped tar whose first member is a pax (or GNU long name) header claiming `size`
    bytes of zeros: tarfile reads such a header whole, into memory, before anything else."""
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = kind, size
    raw = info.tobuf(format=tarfile.USTAR_FORMAT) + bytes(-(-size // 512) * 512 + 1024)
    return gzip.compress(raw, 9)


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME], ids=["pax", "long"])
def test_a_compressed_tar_is_inflated_bounded_by_the_caps(kind: bytes) -> None:
    limits = ArchiveLimits(max_uncompressed_bytes=1024 * 1024, max_archive_entries=10)
    bomb = header_bomb(64 * 1024 * 1024, kind)  # ~64 KiB that inflate to 64 MiB
    assert len(bomb) < limits.max_archive_bytes

    tracemalloc.start()
    try:
        with pytest.raises(PackageError) as refused:
            package_zip(bomb, limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert refused.value.code == "uncompressed_too_large"
    assert peak < 8 * 1024 * 1024


@pytest.mark.parametrize("mode", ["w:gz", "w:bz2", "w:xz"])
def test_a_corrupt_compressed_tar_is_not_a_zip(mode: str) -> None:
    data = os.urandom(100_000)  # incompressible: a flipped byte lands in the data as stored
    skill_md = (entry("demo/SKILL.md"), b"---\nname: demo\n---\n")
    good = tar_of(skill_md, (entry("demo/x"), data), mode=mode)
    middle = len(good) // 2
    corrupt = good[:middle] + bytes([good[middle] ^ 0xFF]) + good[middle + 1 :]

    with pytest.raises(PackageError) as refused:
        package_zip(corrupt, ArchiveLimits())
    assert refused.value.code == "not_a_zip"
