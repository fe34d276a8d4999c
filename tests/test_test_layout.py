"""The tests' layout (issue 11, "Tests"): test modules mirror the packages, and what they share
lives in `tests/support/`. No module of tests/ or bench/ (conftest files included) imports a test
module, a conftest or any other module of tests/ outside `tests.support`; outside tests/support
there are only test modules, conftest files and package markers, so a helper cannot settle
next to the tests that first needed it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import pysource

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = "tests.support"
TEST_FILE_NAMES = ("conftest.py", "__init__.py")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """Every module `source` (the code of `module`) imports, relative imports resolved; for
    `from PACKAGE import NAME`, `PACKAGE.NAME` (NAME may be a module)."""
    found: list[str] = []
    for node in ast.walk(pysource.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return found


def forbidden(imported: str) -> bool:
    """A module of the test tree other than tests/support (and the `tests` package itself)."""
    if imported == "tests" or not imported.startswith("tests."):
        return False
    return not (imported == ALLOWED or imported.startswith(f"{ALLOWED}."))


def violations(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    module = module_name(path)
    found = imported_modules(source, module, is_package=path.name == "__init__.py")
    return [f"{path.relative_to(ROOT)} imports {name}" for name in found if forbidden(name)]


def python_files(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def test_modules_import_only_tests_support_from_the_test_tree() -> None:
    files = python_files("tests") + python_files("bench")
    assert len(files) > 100  # the walk really found the suite
    found = [line for path in files for line in violations(path)]
    assert found == [], "move shared helpers to tests/support/:\n" + "\n".join(found)


def test_outside_tests_support_there_are_only_tests_and_conftest_files() -> None:
    strays = [
        str(path.relative_to(ROOT))
        for path in python_files("tests")
        if not path.is_relative_to(ROOT / "tests/support")
        and not path.name.startswith("test_")
        and path.name not in TEST_FILE_NAMES
    ]
    assert strays == [], "helpers belong in tests/support/: " + ", ".join(strays)


@pytest.mark.parametrize(
    ("source", "module", "bad"),
    [
        ("from tests.backend.api.test_auth import assert_error", "tests.backend.x", True),
        ("from tests.conftest import Account", "tests.backend.x", True),
        ("import tests.chat_shell.fakes as fakes", "tests.x", True),
        ("from tests.chat_shell.tools.mcp import servers", "tests.x", True),
        ("from tests import fake_openai_server", "tests.x", True),
        ("from .conftest import ChatSetup", "tests.backend.chat.test_x", True),
        ("from . import helpers", "tests.backend.chat.test_x", True),
        ("def f():\n    from tests.console.conftest import Console\n", "tests.x", True),
        ("from tests.support.errors import assert_error", "tests.backend.x", False),
        ("from tests.support import zips", "tests.backend.x", False),
        ("from . import zips", "tests.support.chat", False),
        ("import tests.support.zips", "tests.x", False),
        ("from backend.app import create_app", "tests.backend.x", False),
        ("import testsuite", "tests.x", False),
    ],
)
def test_the_check_tells_a_test_module_import_from_a_support_one(
    source: str, module: str, bad: bool
) -> None:
    assert any(forbidden(name) for name in imported_modules(source, module)) is bad
