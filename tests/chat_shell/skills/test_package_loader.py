"""Importing modules from skill ZIP bytes into synthetic packages."""

from __future__ import annotations

import importlib
import io
import sys
import traceback
import zipfile

import pytest

from chat_shell.errors import ProviderLoadError
from chat_shell.skills.package_loader import (
    PackageFiles,
    import_package_module,
    release_package,
    synthetic_package_name,
)
from tests.support import zips
from tests.support.fakes import skill_zip

FILES = {
    "lib/__init__.py": "from .inner import VALUE\n",
    "lib/inner.py": "from ..top import BASE\nVALUE = BASE + 1\n",
    "top.py": "BASE = 41\n",
    "deep/er/mod.py": "def fail():\n    raise ValueError('deep failure')\n",
}


@pytest.fixture
def files() -> PackageFiles:
    return PackageFiles.from_zip(skill_zip("my-skill", FILES))


def test_the_package_root_is_the_folder_holding_skill_md(files: PackageFiles) -> None:
    assert sorted(files.files) == sorted(["SKILL.md", *FILES])


def test_a_zip_without_skill_md_or_not_a_zip_is_rejected() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("x/provider.py", "")
    with pytest.raises(ProviderLoadError, match="no SKILL.md"):
        PackageFiles.from_zip(buffer.getvalue())
    with pytest.raises(ProviderLoadError, match="unreadable"):
        PackageFiles.from_zip(b"not a zip")


def test_modules_import_with_relative_imports_and_implicit_subpackages(
    files: PackageFiles,
) -> None:
    package = synthetic_package_name("My Skill!", "ab" * 32)
    try:
        lib = import_package_module(package, "skill my-skill", files, "lib")
        deep = import_package_module(package, "skill my-skill", files, "deep.er.mod")
        assert package == "_skillhive_my_skill_abababababababab"
        assert lib.VALUE == 42 and lib.__name__ == f"{package}.lib"
        with pytest.raises(ValueError) as raised:
            deep.fail()
        # Tracebacks show the package's source lines, though nothing is on disk.
        rendered = "".join(traceback.format_exception(raised.value))
        assert "<skill my-skill>/deep/er/mod.py" in rendered
        assert "raise ValueError('deep failure')" in rendered
    finally:
        release_package(package)


def test_release_forgets_the_modules_and_the_package(files: PackageFiles) -> None:
    package = synthetic_package_name("s", "cd" * 32)
    import_package_module(package, "s", files, "lib")

    release_package(package)

    assert not [name for name in sys.modules if name.startswith(package)]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"{package}.lib")


def test_a_failing_import_leaves_nothing_registered() -> None:
    files = PackageFiles.from_zip(skill_zip("s", {"bad.py": "import does_not_exist_anywhere\n"}))
    package = synthetic_package_name("s", "ef" * 32)

    with pytest.raises(ProviderLoadError, match="ModuleNotFoundError"):
        import_package_module(package, "s", files, "bad")

    assert not [name for name in sys.modules if name.startswith(package)]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(package)


@pytest.mark.parametrize("module", ["../etc", "a-b", "os.path.", ""])
def test_module_names_must_be_dotted_identifiers(files: PackageFiles, module: str) -> None:
    with pytest.raises(ProviderLoadError, match="invalid provider module"):
        import_package_module(synthetic_package_name("s", "01" * 32), "s", files, module)


LAYOUTS = {
    "root": {"SKILL.md": "x", "a.py": "", "sub/b.py": ""},
    "folder": {"s/SKILL.md": "x", "s/a.py": "", "s/.env": "", "s/__pycache__/.x": ""},
    "dot-folder first": {
        ".evil/SKILL.md": "x",
        ".evil/p.py": "",
        "ok/SKILL.md": "x",
        "ok/p.py": "",
    },
    "mac forks": {"__MACOSX/s/._p.py": "", "s/SKILL.md": "x", "s/p.py": ""},
    "outside root": {"s/SKILL.md": "x", "s/p.py": "", "other/q.py": "", "top.py": ""},
    "lowercase": {"s/skill.md": "x", "s/p.py": ""},
    "nested manifest": {"s/SKILL.md": "x", "s/inner/SKILL.md": "y", "s/inner/p.py": ""},
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_engine_sees_exactly_the_files_an_upload_lists(layout: str) -> None:
    from backend.skills.package import read_package  # the upload path (tests may import it)

    data = zips.build(
        {k: zips.skill_md("s") if v == "x" else v for k, v in LAYOUTS[layout].items()}
    )
    uploaded = {f.path for f in read_package(data, public=True, fallback_name="s").files}
    assert set(PackageFiles.from_zip(data).files) == uploaded
