"""How `get` prints: readable tables (rich on a terminal, plain columns otherwise), YAML that
`apply` takes back, JSON; and label selectors (`-l`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer
import yaml

from backend.client.errors import CliError, ExitCode

Row = dict[str, str]
Column = tuple[str, Callable[[dict[str, Any]], str]]


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels = obj.get("metadata", {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def _label_text(obj: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(_labels(obj).items())) or "<none>"


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _meta(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda o: str(o.get("metadata", {}).get(key, ""))


def _warnings(o: dict[str, Any]) -> str:
    return str(len(o.get("status", {}).get("warnings") or []))


SKILL_COLUMNS: list[Column] = [
    ("NAMESPACE", _meta("namespace")),
    ("NAME", _meta("name")),
    ("ENABLED", lambda o: str(o.get("status", {}).get("enabled", True)).lower()),
    ("VERSION", _meta("resourceVersion")),
    ("WARNINGS", _warnings),
    ("DESCRIPTION", lambda o: _short(str(o.get("spec", {}).get("description", "")), 50)),
]
SKILL_WIDE: list[Column] = [
    ("LABELS", _label_text),
    ("FILES", lambda o: str(len(o.get("spec", {}).get("files") or []))),
    ("SIZE", lambda o: str(o.get("status", {}).get("size", ""))),
    ("SHA256", lambda o: str(o.get("status", {}).get("sha256", ""))[:12]),
]
GHOST_COLUMNS: list[Column] = [
    ("NAMESPACE", _meta("namespace")),
    ("NAME", _meta("name")),
    ("MODEL", lambda o: str((o.get("spec", {}).get("model") or {}).get("name", ""))),
    ("SKILLS", lambda o: str(len(o.get("spec", {}).get("skills") or []))),
    ("VERSION", _meta("resourceVersion")),
    ("WARNINGS", _warnings),
]
GHOST_WIDE: list[Column] = [
    ("LABELS", _label_text),
    ("SKILL NAMES", lambda o: _short(",".join(o.get("spec", {}).get("skills") or []), 60)),
]
CONVERSATION_COLUMNS: list[Column] = [
    ("ID", lambda o: str(o["id"])),
    ("GHOST", lambda o: str(o["ghost"])),
    ("TITLE", lambda o: _short(str(o.get("title", "")), 40)),
    ("UPDATED", lambda o: str(o.get("updated_at", ""))[:19]),
]
CONVERSATION_WIDE: list[Column] = [("CREATED", lambda o: str(o.get("created_at", ""))[:19])]


def table(objects: Sequence[dict[str, Any]], columns: Sequence[Column]) -> None:
    headers = [name for name, _ in columns]
    rows = [[cell(obj) for _, cell in columns] for obj in objects]
    if not rows:
        typer.echo("No resources found.", err=True)
        return
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        grid = Table(box=None, header_style="bold", pad_edge=False)
        for name in headers:
            grid.add_column(name, overflow="fold")
        for row in rows:
            grid.add_row(*row)
        Console().print(grid)
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    for line in [headers, *rows]:
        typer.echo("   ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def dump_yaml(objects: Sequence[dict[str, Any]]) -> str:
    """One YAML document per object (`apply -f` takes the stream back)."""
    return yaml.safe_dump_all(list(objects), sort_keys=False, allow_unicode=True)


def dump_json(objects: Sequence[dict[str, Any]], *, single: bool) -> str:
    value: Any = objects[0] if single and len(objects) == 1 else list(objects)
    return json.dumps(value, indent=2, ensure_ascii=False)


# Label selectors: `k=v`, `k==v`, `k!=v`, `k` (exists), `!k` (absent), comma-separated (AND).
Requirement = tuple[str, str, str | None]


def parse_selector(text: str | None) -> list[Requirement]:
    if not text:
        return []
    requirements: list[Requirement] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            requirements.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            requirements.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            requirements.append((part[1:].strip(), "absent", None))
        else:
            requirements.append((part, "exists", None))
    for key, _, _ in requirements:
        if not key:
            raise CliError(f"invalid label selector {text!r}", ExitCode.USAGE)
    return requirements


def matches(obj: dict[str, Any], requirements: list[Requirement]) -> bool:
    labels = _labels(obj)
    for key, op, value in requirements:
        if op == "=" and labels.get(key) != value:
            return False
        if op == "!=" and labels.get(key) == value:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "absent" and key in labels:
            return False
    return True
