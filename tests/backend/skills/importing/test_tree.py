"""Skill folders of a fetched tree, and the deterministic ZIP built for each."""

from __future__ import annotations

import hashlib
import random
import zipfile
from io import BytesIO

from backend.skills.importing.tree import TreeFile, build_zip, skill_folders, start_deflate
from backend.skills.package import read_package
from tests.support import zips


def files() -> dict[str, TreeFile]:
    return {
        "SKILL.md": TreeFile(zips.skill_md("demo").encode(), 0o644),
        "scripts/run.sh": TreeFile(b"echo hi\n", 0o755),
        "assets/noise.bin": TreeFile(random.Random(1).randbytes(8192), 0o644),
    }


def test_identical_files_give_identical_zip_bytes_whatever_their_order() -> None:
    forward = files()
    backward = dict(reversed(list(forward.items())))
    first, second = build_zip(forward, "demo").data, build_zip(backward, "demo").data
    assert hashlib.sha256(first).digest() == hashlib.sha256(second).digest()
    changed = {**forward, "scripts/run.sh": TreeFile(b"echo bye\n", 0o755)}
    assert build_zip(changed, "demo").data != first


def test_the_zip_is_a_valid_package_keeping_modes_and_storing_incompressible_files() -> None:
    data = build_zip(files(), "demo").data
    package = read_package(data)  # every entry inflated against its header: they are true
    assert package.name == "demo"
    assert read_package(data, verify=False) == package  # what imports read it as
    modes = {f.path: f.mode for f in package.files}
    assert modes["scripts/run.sh"] == 0o755 and modes["SKILL.md"] == 0o644
    with zipfile.ZipFile(BytesIO(data)) as archive:
        methods = {i.filename: i.compress_type for i in archive.infolist()}
    assert methods["demo/assets/noise.bin"] == zipfile.ZIP_STORED
    assert methods["demo/SKILL.md"] == zipfile.ZIP_DEFLATED


def test_every_entry_reads_back_as_written_with_crcs_checked_by_zipfile() -> None:
    """The ZIP is written by hand (ISA-L deflate): zipfile, an independent reader, inflates
    every entry and checks its CRC; UTF-8 names, empty and large text files included."""
    written = {
        **files(),
        "references/café.md": TreeFile("déjà vu ".encode() * 20_000, 0o644),
        "empty.txt": TreeFile(b"", 0o644),
    }
    data = build_zip(written, "demo").data
    with zipfile.ZipFile(BytesIO(data)) as archive:
        assert archive.testzip() is None
        read = {i.filename: archive.read(i) for i in archive.infolist()}
        compressed = archive.getinfo("demo/references/café.md").compress_size
    assert read == {f"demo/{path}": file.data for path, file in written.items()}
    assert compressed < len(written["references/café.md"].data) / 10
    assert read_package(data).files == read_package(data, verify=False).files


def test_skill_folders_are_the_outermost_ones_holding_a_skill_md() -> None:
    tree = {
        "README.md": b"",
        "skills/a/SKILL.md": b"",
        "skills/a/nested/SKILL.md": b"",  # part of skill a, not a skill of its own
        "skills/b/skill.md": b"",
        ".github/x/SKILL.md": b"",  # ignored, as in packages
    }
    assert skill_folders(tree) == ["skills/a", "skills/b"]
    assert skill_folders({"SKILL.md": b"", "x/SKILL.md": b""}) == [""]


def test_deflates_started_early_give_the_same_zip_and_large_files_are_deflated_too() -> None:
    """`start_deflate` (a fetch calls it per blob as it arrives) changes when files are
    deflated, never the bytes: the ZIP is the same as one built from the bare files."""
    text = b"".join(b"reference line %d\n" % i for i in range(20_000))  # several 64 KiB
    written = {**files(), "references/long.md": TreeFile(text, 0o644)}
    early = {
        path: TreeFile(file.data, file.mode, start_deflate(file.data))
        for path, file in written.items()
    }
    assert early["references/long.md"].deflated is not None  # large: started
    assert early["SKILL.md"].deflated is None  # small: deflated with the ZIP
    data = build_zip(early, "demo").data
    assert data == build_zip(written, "demo").data
    with zipfile.ZipFile(BytesIO(data)) as archive:
        assert archive.read("demo/references/long.md") == text
        assert archive.getinfo("demo/references/long.md").compress_size < len(text) / 4
