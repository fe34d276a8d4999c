"""docs/architecture.md cannot drift silently: every name it writes in backticks that looks like
a path, setting, CLI command, route, Socket.IO event, Redis key, class, constant or function must
exist in the code, its data-model table must match the models, and the import rings it describes
must hold."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import socketio
import typer

from backend.api.console import console_router
from backend.app import create_app
from backend.cli import app as cli_app
from backend.config import NON_SERVER_VARIABLES, Settings
from backend.db.models import Base
from backend.ws.chat_namespace import ChatNamespace
from backend.ws.rooms import NAMESPACE
from tests.support import pysource

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SOURCE_DIRS = ("backend", "chat_shell")
TOP_DIRS = "backend|chat_shell|migrations|skills|tests|docs|scripts|bench"


# --- what the code has -----------------------------------------------------------------------


@cache
def _sources() -> dict[Path, str]:
    return {p: p.read_text() for d in SOURCE_DIRS for p in sorted((ROOT / d).rglob("*.py"))}


@cache
def _definitions() -> tuple[frozenset[str], frozenset[str], dict[str, frozenset[str]]]:
    """Functions, classes and module-level names, and each class's methods."""
    functions: set[str] = set()
    names: set[str] = set()
    methods: dict[str, frozenset[str]] = {}
    for text in _sources().values():
        tree = pysource.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.add(node.name)
            elif isinstance(node, ast.ClassDef):
                names.add(node.name)
                methods[node.name] = frozenset(
                    n.name
                    for n in node.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                )
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return frozenset(functions), frozenset(names), methods


def _in_source(fragment: str) -> bool:
    return any(fragment in text for text in _sources().values())


@cache
def _routes() -> frozenset[tuple[str, str]]:
    """(METHOD, path with every parameter written `{}`) of every API route (from OpenAPI)."""
    paths = create_app(Settings()).openapi()["paths"]
    return frozenset(
        (method.upper(), re.sub(r"\{[^}]+\}", "{}", path))
        for path, operations in paths.items()
        for method in operations
    )


def _route_exists(token: str) -> bool:
    method, path = token.split(" ", 1)
    return (method, re.sub(r"\{[^}]+\}", "{}", path)) in _routes()


def _url_exists(token: str) -> bool:
    asgi_path = inspect.signature(socketio.ASGIApp).parameters["socketio_path"].default
    known = {f"/{asgi_path}/", NAMESPACE}
    paths = {path for _, path in _routes()} | _pages()
    return token in known or any(p == token or p.startswith(token + "/") for p in paths)


@cache
def _pages() -> frozenset[str]:
    """Paths of the console's routes, outside the API's schema (its pages, `/docs`)."""
    return frozenset(getattr(r, "path", "") for r in console_router(Settings()).routes)


def _cli_exists(token: str) -> bool:
    command = typer.main.get_command(cli_app)
    for word in token.split()[1:]:
        if word.startswith("--"):
            options = {o for p in command.params for o in getattr(p, "opts", [])}
            if word not in options:
                return False
        elif word in getattr(command, "commands", {}):  # a group (typer ships its own click)
            command = command.commands[word]
        else:
            return False
    return True


def _event_exists(token: str) -> bool:
    handler = "on_" + token.replace(":", "_")
    return hasattr(ChatNamespace, handler) or _in_source(f'"{token}"')


def _method_exists(token: str) -> bool:
    cls, method = token.split(".")
    return method in _definitions()[2].get(cls, frozenset())


SETTINGS = {f"SKILLHIVE_{name.upper()}" for name in Settings.model_fields} | NON_SERVER_VARIABLES

# (pattern, check) in order; the first pattern that matches a token decides its check.
CHECKS: list[tuple[re.Pattern[str], Callable[[str], bool]]] = [
    (
        re.compile(rf"(?:{TOP_DIRS})/[\w./-]*|[\w-]+\.(?:py|md|yml|toml|ini)"),
        lambda t: (ROOT / t).exists(),
    ),
    (re.compile(r"SKILLHIVE_[A-Z0-9_]+"), lambda t: t in SETTINGS),
    (re.compile(r"skillhive(?: [a-z-]+)+(?: --[a-z-]+)*"), _cli_exists),
    (re.compile(r"(?:GET|POST|PUT|PATCH|DELETE) /\S*"), _route_exists),
    (re.compile(r"/[\w./{}-]*"), _url_exists),
    (re.compile(r"(?:chat|conversation|skill):[a-z_]+"), _event_exists),
    (re.compile(r"[\w-]+:[\w:-]*\{\w+\}"), lambda t: _in_source(t.split("{")[0])),
    (re.compile(r"skillhive[:-][\w:-]+"), lambda t: _in_source(f'"{t}"')),
    (re.compile(r"[A-Z]\w+\.[a-z_]\w*"), _method_exists),
    (re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*"), lambda t: t in _definitions()[1]),
    (re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"), lambda t: t in _definitions()[1]),
    (re.compile(r"[a-z_][a-z0-9_]*\(\)"), lambda t: t[:-2] in _definitions()[0]),
]


def unknown_names(text: str) -> list[str]:
    """The backticked names in `text` that a check recognises and the code does not have."""
    missing = []
    for token in dict.fromkeys(re.findall(r"`([^`\n]+)`", text)):
        for pattern, exists in CHECKS:
            if pattern.fullmatch(token):
                if not exists(token):
                    missing.append(token)
                break
    return missing


def data_model_problems(text: str) -> list[str]:
    """Differences between the doc's data-model table and `backend/db/models.py`."""
    section = text[text.index("## Data model") :]
    section = section[: section.index("\n## ", 1)]
    rows = re.findall(r"^\| `(\w+)` \| (.*?) \|", section, re.M)
    problems = []
    tables = Base.metadata.tables
    for name, cells in rows:
        if name not in tables:
            problems.append(f"table {name} does not exist")
            continue
        for column in re.findall(r"`(\w+)`", cells):
            if column not in tables[name].columns:
                problems.append(f"{name}.{column} does not exist")
        undocumented = set(tables[name].columns.keys()) - set(re.findall(r"`(\w+)`", cells))
        problems += [f"{name}.{c} is not documented" for c in sorted(undocumented)]
    problems += [f"table {t} is not documented" for t in sorted(set(tables) - {n for n, _ in rows})]
    return problems


# --- the document ------------------------------------------------------------------------------


def test_every_name_the_architecture_doc_cites_exists() -> None:
    assert unknown_names(DOC.read_text()) == []


def test_the_data_model_table_matches_the_models() -> None:
    assert data_model_problems(DOC.read_text()) == []


def test_the_checks_see_most_of_what_the_doc_cites() -> None:
    tokens = set(re.findall(r"`([^`\n]+)`", DOC.read_text()))
    checked = {t for t in tokens if any(p.fullmatch(t) for p, _ in CHECKS)}
    assert len(checked) >= 100, sorted(tokens - checked)


@pytest.mark.parametrize(
    "name",
    [
        "backend/chat/nope.py",
        "SKILLHIVE_NOPE",
        "skillhive nope",
        "skillhive worker --nope",
        "GET /api/v1/nope",
        "POST /healthz",
        "/api/v2",
        "chat:nope",
        "skillhive:nope",
        "skillhive:nope:{id}",
        "NopeRuntime",
        "ChatRuntime.nope",
        "NOPE_CONSTANT",
        "nope_function()",
    ],
)
def test_a_name_the_code_does_not_have_is_reported(name: str) -> None:
    assert unknown_names(f"see `{name}` and `backend/chat/turns.py`") == [name]


def test_a_wrong_data_model_row_is_reported() -> None:
    text = DOC.read_text().replace("| `users` | `id`, `name`,", "| `users` | `id`, `nickname`,")
    assert data_model_problems(text) == [
        "users.nickname does not exist",
        "users.name is not documented",
    ]


# --- the import rings ----------------------------------------------------------------------


def _backend_imports(path: Path) -> set[str]:
    """The backend modules `path` imports, e.g. `backend.ws.rooms`."""
    found = set()
    for node in ast.walk(pysource.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module == "backend":  # `from backend import heartbeat`
                found |= {f"backend.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("backend.")}


EDGES = {"app", "cli", "cli_skills", "worker", "api", "ws", "client"}
DOMAIN = {"auth", "skills", "ghosts", "secrets", "chat", "plugins", "artifacts", "ops"}
STORAGE = {"kinds", "db", "crd"}
ALLOWED: set[str] = set()  # no outward import: turns publish to their transport


@pytest.mark.parametrize(
    ("ring", "may_not_import"),
    [(DOMAIN, EDGES), (STORAGE, EDGES | DOMAIN)],
    ids=["domain", "storage"],
)
def test_imports_point_inwards(ring: set[str], may_not_import: set[str]) -> None:
    offenders = {}
    for package in ring:
        for path in (ROOT / "backend" / package).rglob("*.py"):
            bad = {m for m in _backend_imports(path) - ALLOWED if m.split(".")[1] in may_not_import}
            if bad:
                offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert len(list((ROOT / "backend").rglob("*.py"))) > 40  # the walk really saw the package
    assert offenders == {}


def _chat_shell_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(pysource.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m == "chat_shell" or m.startswith("chat_shell.")}


def test_backend_imports_chat_shell_only_through_its_public_api() -> None:
    import chat_shell

    offenders = {}
    for path in (ROOT / "backend").rglob("*.py"):
        deep = sorted(m for m in _chat_shell_imports(path) if m != "chat_shell")
        if deep:
            offenders[str(path.relative_to(ROOT))] = deep
    assert offenders == {}
    for name in chat_shell.__all__:  # every public name really resolves
        assert getattr(chat_shell, name) is not None, name
