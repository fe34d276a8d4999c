"""What `apply -f` reads: YAML/JSON files, stdin, folders, skill folders.

A folder with a `SKILL.md` is a skill to upload. A document of kind `Skill` with `spec.path`
(a folder, relative to the file the document is in) is one too, with the document's
`metadata.namespace` and `metadata.labels`; a `Skill` document without `spec.path` (what
`get skills -o yaml` prints) only sets the labels of an existing skill.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from backend.client.errors import CliError

DOCUMENT_SUFFIXES = (".yaml", ".yml", ".json")
# Server-managed fields: `get -o yaml` prints them, apply leaves them out so the output of one
# server applies to another (and a stale resourceVersion is no precondition).
_MANAGED_METADATA = ("resourceVersion", "creationTimestamp")


@dataclass
class Document:
    source: str  # file path, "-" or a skill folder: named in errors
    base: Path  # relative `spec.path`s start here
    body: dict[str, Any]


@dataclass
class SkillSource:
    """A skill to apply: a folder to upload and/or labels to set."""

    source: str
    namespace: str
    name: str | None  # from the document; the package's own name otherwise
    folder: Path | None
    labels: dict[str, str] | None = field(default=None)  # None: leave the labels alone


def _parse(text: str, source: str) -> list[Any]:
    stripped = text.lstrip()
    try:
        if stripped.startswith(("[", "{")):
            value = json.loads(text)
            return value if isinstance(value, list) else [value]
        found: list[Any] = []
        for document in yaml.safe_load_all(text):
            found += document if isinstance(document, list) else [document]
        return found
    except json.JSONDecodeError as exc:
        raise CliError(f"{source}: not valid JSON: {exc}") from None
    except yaml.YAMLError as exc:
        raise CliError(f"{source}: not valid YAML: {_one_line(exc)}") from None


def _one_line(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        return f"{exc.problem} (line {exc.problem_mark.line + 1})"
    return " ".join(str(exc).split())


def _read_file(path: Path) -> list[Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}") from None
    return [Document(str(path), path.parent, d) for d in _parse(text, str(path)) if d is not None]


def _walk(folder: Path) -> tuple[list[Document], list[Path]]:
    """Documents of every YAML/JSON file under `folder` and its skill folders (sorted)."""
    if (folder / "SKILL.md").is_file():
        return [], [folder]
    documents: list[Document] = []
    skills: list[Path] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            more, found = _walk(entry)
            documents += more
            skills += found
        elif entry.suffix.lower() in DOCUMENT_SUFFIXES:
            documents += _read_file(entry)
    return documents, skills


def read_inputs(paths: list[str]) -> tuple[list[Document], list[Path]]:
    documents: list[Document] = []
    skills: list[Path] = []
    for raw in paths:
        if raw == "-":
            documents += [
                Document("-", Path.cwd(), d) for d in _parse(sys.stdin.read(), "-") if d is not None
            ]
            continue
        path = Path(raw)
        if path.is_dir():
            more, found = _walk(path)
            documents += more
            skills += found
        elif path.is_file():
            documents += _read_file(path)
        else:
            raise CliError(f"{raw}: no such file or folder")
    return documents, skills


def clean(body: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The document as apply sends it: default namespace filled in, server fields left out."""
    body = {k: v for k, v in body.items() if k != "status"}
    metadata = dict(body.get("metadata") or {})
    for key in _MANAGED_METADATA:
        metadata.pop(key, None)
    metadata.setdefault("namespace", namespace)
    body["metadata"] = metadata
    return body


def skill_source(document: Document, namespace: str) -> SkillSource:
    body = document.body
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    assert isinstance(metadata, dict) and isinstance(spec, dict)
    path = spec.get("path")
    folder = None
    if path is not None:
        if not isinstance(path, str) or not path:
            raise CliError(f"{document.source}: Skill spec.path must be a folder path")
        folder = (document.base / path).resolve()
        if not (folder / "SKILL.md").is_file():
            raise CliError(
                f"{document.source}: spec.path {path!r} is not a skill folder ({folder})"
            )
    name = metadata.get("name")
    if folder is None and not isinstance(name, str):
        raise CliError(f"{document.source}: a Skill needs metadata.name or spec.path")
    labels = metadata.get("labels")
    if labels is not None and not isinstance(labels, dict):
        raise CliError(f"{document.source}: metadata.labels must be a mapping")
    return SkillSource(
        source=document.source,
        namespace=str(metadata.get("namespace") or namespace),
        name=name if isinstance(name, str) else None,
        folder=folder,
        labels={str(k): str(v) for k, v in labels.items()} if labels is not None else None,
    )
