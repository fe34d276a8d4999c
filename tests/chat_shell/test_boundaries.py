"""chat_shell's import boundaries (docs/architecture.md): it imports nothing from backend, and its
private modules (a leading `_`) are imported only inside their own package. Backend imports only
the package root (`tests/test_architecture_doc.py` checks that)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import chat_shell
from tests.support import pysource

ROOT = Path(chat_shell.__file__).parent
REPO = ROOT.parent

# Modules without a leading `_`: what another chat_shell package, or a skill's tool provider
# (skills/*/provider.py), imports as its package's API. Every other module is private.
PUBLIC_MODULES = {
    # the engine's shared vocabulary
    "chat_shell.contracts",
    "chat_shell.errors",
    "chat_shell.models",
    "chat_shell.observe",
    "chat_shell.offline",
    "chat_shell.ports",
    "chat_shell.net.egress",
    "chat_shell.net.upstream",
    "chat_shell.packages.limits",
    "chat_shell.sandbox.workspace",
    # what the agent loop and the tools use of skills
    "chat_shell.skills.active",
    "chat_shell.skills.allowed",
    "chat_shell.skills.package_loader",
    "chat_shell.skills.prompt",
    "chat_shell.skills.provider",  # also the provider API of skill packages
    "chat_shell.skills.registry",
    "chat_shell.skills.toolset",
    # the agent's built-in tools
    "chat_shell.tools.builtin.load_skill",
    "chat_shell.tools.builtin.search_skills",
    "chat_shell.tools.builtin.skill_files",
    # pending requests: the import path (also for skill providers) and what it gathers
    "chat_shell.tools.pending_requests",
    "chat_shell.tools.pending.base",
    "chat_shell.tools.pending.errors",
    "chat_shell.tools.pending.memory",
    "chat_shell.tools.pending.redis_registry",
    "chat_shell.tools.sandbox.skill_run",
}


def imported_modules(path: Path) -> set[str]:
    """Every name `path` imports, and for `from a import b` also `a.b` (b may be a module)."""
    tree = pysource.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def dotted(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """chat_shell's modules by dotted name, packages (`__init__.py`) left out."""
    return {dotted(p): p for p in sorted(ROOT.rglob("*.py")) if p.name != "__init__.py"}


@cache
def importers() -> dict[str, set[str]]:
    """Each chat_shell module -> the packages of the files that import it: chat_shell's own files
    but the root `__init__.py` (the public API, which re-exports from anywhere), backend's and
    the skill providers' (as the package `-`, outside chat_shell)."""
    files = [p for p in ROOT.rglob("*.py") if p != ROOT / "__init__.py"]
    outside = [*(REPO / "backend").rglob("*.py"), *(REPO / "skills").rglob("*.py")]
    found: dict[str, set[str]] = {name: set() for name in modules()}
    for path in files + outside:
        package = dotted(path.parent) if path in files else "-"
        for name in imported_modules(path) & found.keys():
            found[name].add(package)
    return found


def package_of(module: str) -> str:
    return module.rsplit(".", 1)[0]


def test_no_chat_shell_module_imports_backend() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m.split(".")[0] == "backend"
        )
        for path in ROOT.rglob("*.py")
    }

    assert len(offenders) > 20  # the walk really saw the package
    assert {p: m for p, m in offenders.items() if m} == {}


def test_every_module_is_private_or_listed_public() -> None:
    names = modules().keys()
    unmarked = {m for m in names if not m.rsplit(".", 1)[1].startswith("_")}

    assert len(names) > 40  # the walk really saw the package
    assert sorted(unmarked - PUBLIC_MODULES) == []  # new module: `_name.py`, or list it above
    assert sorted(PUBLIC_MODULES - unmarked) == []  # listed, but gone or renamed


def test_private_modules_are_imported_only_inside_their_package() -> None:
    private = {m: packages for m, packages in importers().items() if m not in PUBLIC_MODULES}
    offenders = {m: sorted(p - {package_of(m)}) for m, p in private.items() if p - {package_of(m)}}

    assert sum(len(p) for p in private.values()) > 20  # the imports really were seen
    assert offenders == {}


def test_public_modules_are_imported_from_another_package() -> None:
    """Otherwise the module is private and takes a leading `_`."""
    unused = sorted(m for m in PUBLIC_MODULES if not importers()[m] - {package_of(m)})

    assert unused == []


def test_the_walk_sees_both_ways_of_importing_a_module(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text(
        "from chat_shell.sandbox import _wrapper as wrapper\nimport chat_shell.agent._runner\n"
    )

    assert {"chat_shell.sandbox._wrapper", "chat_shell.agent._runner"} <= imported_modules(source)
