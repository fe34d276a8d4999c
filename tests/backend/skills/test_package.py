"""Package layout, strict mode, code flags, file reads, deterministic zipping and the limits."""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from backend.config import Settings
from backend.skills.errors import PackageError
from backend.skills.folder import zip_folder
from backend.skills.limits import ArchiveLimits
from backend.skills.package import read_package, read_package_file
from tests.support.zipcraft import make_zip, skill_md, skill_zip

MD = skill_md("name: demo\ndescription: A demo skill.")


def error_of(data: bytes, **kwargs: object) -> PackageError:
    with pytest.raises(PackageError) as info:
        read_package(data, **kwargs)  # type: ignore[arg-type]
    return info.value


def test_skill_md_may_sit_at_the_archive_root() -> None:
    package = read_package(make_zip({"SKILL.md": MD, "references/a.md": "A"}))
    assert [f.path for f in package.files] == ["SKILL.md", "references/a.md"]
    assert package.warnings == ()


def test_skill_md_may_sit_in_one_top_level_folder() -> None:
    package = read_package(make_zip({"demo/SKILL.md": MD, "demo/scripts/run.sh": "echo"}))
    assert [(f.path, f.size) for f in package.files] == [
        ("SKILL.md", len(MD)),
        ("scripts/run.sh", 4),
    ]


def test_a_root_skill_md_wins_over_nested_ones() -> None:
    package = read_package(make_zip({"SKILL.md": MD, "examples/SKILL.md": MD}))
    assert {f.path for f in package.files} == {"SKILL.md", "examples/SKILL.md"}


def test_lowercase_skill_md_is_accepted_as_skills_ref_does() -> None:
    assert read_package(make_zip({"demo/skill.md": MD})).name == "demo"


def test_macos_forks_and_dotfiles_are_ignored() -> None:
    package = read_package(
        make_zip(
            {
                "__MACOSX/demo/._SKILL.md": "fork",
                "demo/SKILL.md": MD,
                "demo/.DS_Store": "x",
                "demo/.git/config": "x",
                "demo/ref.md": "r",
            }
        )
    )
    assert [f.path for f in package.files] == ["SKILL.md", "ref.md"]
    assert package.warnings == ()


def test_an_archive_without_skill_md_is_refused() -> None:
    for files in ({"README.md": "x"}, {"a/b/SKILL.md": MD}, {".hidden/SKILL.md": MD}):
        err = error_of(make_zip(files))  # type: ignore[arg-type]
        assert (err.code, err.status_code) == ("skill_md_missing", 422)


def test_skill_md_in_two_top_level_folders_is_ambiguous() -> None:
    err = error_of(make_zip({"one/SKILL.md": MD, "two/SKILL.md": MD}))
    assert (err.code, err.status_code) == ("ambiguous_root", 422)
    assert err.details["candidates"] == ["one/SKILL.md", "two/SKILL.md"]
    assert err.details["entry"] == "two/SKILL.md"


def test_files_outside_the_skill_folder_are_left_out_with_a_warning() -> None:
    package = read_package(make_zip({"demo/SKILL.md": MD, "notes.txt": "n", "other/x": "x"}))
    assert [f.path for f in package.files] == ["SKILL.md"]
    assert [w.code for w in package.warnings] == ["outside_root"]
    assert "notes.txt" in package.warnings[0].message


def test_python_files_and_providers_are_code() -> None:
    assert not read_package(skill_zip()).has_code
    assert read_package(make_zip({"demo/SKILL.md": MD, "demo/tools/helper.py": "x = 1"})).has_code
    provider = "name: demo\ndescription: d\nprovider: {module: p, class: P}"
    assert read_package(skill_zip(provider)).has_code


def test_code_in_a_user_skill_is_kept_and_warned() -> None:
    data = make_zip({"demo/SKILL.md": MD, "demo/provider.py": "print('hi')"})
    user = read_package(data)
    assert user.has_code
    assert [w.code for w in user.warnings] == ["code_not_allowed"]
    assert "'provider.py'" in user.warnings[0].message
    assert read_package(data, public=True).warnings == ()


def test_strict_mode_refuses_any_warning_listing_them_all() -> None:
    data = make_zip({"folder/SKILL.md": skill_md("name: demo\ndescription: d\ntriggers: [x]")})
    err = error_of(data, strict=True)
    assert (err.code, err.status_code, err.details["entry"]) == (
        "strict_warnings",
        422,
        "folder/SKILL.md",
    )
    assert [w["code"] for w in err.details["warnings"]] == ["name_mismatch", "unknown_field"]
    assert "name_mismatch" in err.message and "unknown_field" in err.message


def test_strict_mode_accepts_a_clean_package() -> None:
    assert read_package(skill_zip(), strict=True).name == "demo"


def test_the_hash_and_size_are_of_the_zip_bytes() -> None:
    data = skill_zip()
    package = read_package(data)
    assert (package.sha256, package.size) == (hashlib.sha256(data).hexdigest(), len(data))
    assert read_package(data, sha256="f" * 64).sha256 == "f" * 64  # hashed while receiving


def test_one_file_can_be_read_by_its_path_in_the_skill() -> None:
    data = make_zip({"demo/SKILL.md": MD, "demo/references/api.md": "# API", "demo/.env": "SECRET"})
    assert read_package_file(data, "references/api.md") == b"# API"
    assert read_package_file(data, "SKILL.md") == MD.encode()


@pytest.mark.parametrize(
    "path",
    ["missing.md", "../demo/SKILL.md", "demo/SKILL.md", "/SKILL.md", ".env", "references", ""],
)
def test_paths_that_are_not_package_files_are_404(path: str) -> None:
    data = make_zip({"demo/SKILL.md": MD, "demo/references/api.md": "# API", "demo/.env": "SECRET"})
    with pytest.raises(PackageError) as info:
        read_package_file(data, path)
    assert (info.value.code, info.value.status_code, info.value.details["path"]) == (
        "file_not_found",
        404,
        path,
    )


def test_limits_default_to_the_settings_defaults_and_follow_settings() -> None:
    defaults = Settings()
    assert ArchiveLimits.from_settings(defaults) == ArchiveLimits()
    assert ArchiveLimits().max_archive_entries == defaults.max_archive_entries == 1000
    custom = ArchiveLimits.from_settings(Settings(max_archive_entries=3, max_skill_md_bytes=10))
    assert (custom.max_archive_entries, custom.max_skill_md_bytes) == (3, 10)
    err = error_of(make_zip({"demo/SKILL.md": MD}), limits=custom)
    assert err.code == "skill_md_too_large"


# ---- zip_folder -----------------------------------------------------------------------------


def make_folder(root: Path) -> Path:
    folder = root / "my-skill"
    (folder / "scripts").mkdir(parents=True)
    (folder / "__pycache__").mkdir()
    (folder / ".git").mkdir()
    (folder / "SKILL.md").write_text(skill_md("description: Named by its folder."))
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\n")
    (folder / "scripts" / "run.sh").chmod(0o750)
    (folder / "notes.md").write_text("n")
    (folder / "notes.md").chmod(0o600)
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (folder / ".git" / "HEAD").write_text("ref")
    (folder / ".env").write_text("SECRET=1")
    return folder


def test_zip_folder_keeps_modes_and_skips_dotfiles_and_caches(tmp_path: Path) -> None:
    data = zip_folder(make_folder(tmp_path))
    with zipfile.ZipFile(BytesIO(data)) as zf:
        modes = {i.filename: stat.S_IMODE(i.external_attr >> 16) for i in zf.infolist()}
    assert modes == {
        "my-skill/SKILL.md": 0o644,
        "my-skill/notes.md": 0o644,
        "my-skill/scripts/run.sh": 0o755,
    }
    package = read_package(data)
    assert (package.name, [f.mode for f in package.files]) == ("my-skill", [0o644, 0o644, 0o755])


def test_zip_folder_is_deterministic(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    first = zip_folder(folder)
    os.utime(folder / "SKILL.md", (0, 0))
    (folder / "notes.md").chmod(0o640)
    assert zip_folder(folder) == first
    (folder / "notes.md").write_text("changed")
    assert zip_folder(folder) != first


def test_zip_folder_refuses_symlinks(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    (folder / "scripts" / "link").symlink_to("/etc/passwd")
    with pytest.raises(PackageError) as info:
        zip_folder(folder)
    assert (info.value.code, info.value.details["entry"]) == ("symlink_entry", "scripts/link")


def test_zip_folder_refuses_a_fifo_instead_of_blocking_on_it(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    os.mkfifo(folder / "scripts" / "pipe")  # reading one blocked `skills push` forever
    with pytest.raises(PackageError) as info:
        zip_folder(folder)
    assert (info.value.code, info.value.details["entry"]) == ("non_regular_entry", "scripts/pipe")


def test_zip_folder_stops_at_the_upload_limits_before_reading_the_rest(tmp_path: Path) -> None:
    folder = make_folder(tmp_path)
    (folder / "big.bin").write_bytes(b"x" * 2048)
    small = ArchiveLimits(max_uncompressed_bytes=1024)
    with pytest.raises(PackageError) as info:
        zip_folder(folder, small)
    assert info.value.code == "uncompressed_too_large"
    with pytest.raises(PackageError) as info:
        zip_folder(folder, ArchiveLimits(max_archive_entries=3))
    assert info.value.code == "too_many_entries"
