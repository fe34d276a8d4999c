"""chat_shell imports nothing from backend (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import chat_shell

ROOT = Path(chat_shell.__file__).parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_chat_shell_module_imports_backend() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m.split(".")[0] == "backend"
        )
        for path in ROOT.rglob("*.py")
    }

    assert len(offenders) > 20  # the walk really saw the package
    assert {p: m for p, m in offenders.items() if m} == {}
