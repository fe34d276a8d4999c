"""`skillhive apply`: skills first (Ghosts name them), then every Ghost in one all-or-nothing
`POST /api/v1/apply`; one kubectl-style line per object; `--prune` deletes what left the input."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from backend.client.api import Api, ghosts_path, skills_path
from backend.client.documents import Document, SkillSource, clean, skill_source
from backend.client.errors import ApiError, CliError, ExitCode
from backend.client.output import Requirement, matches
from backend.errors import SkillhiveError
from backend.skills.folder import zip_folder


@dataclass(frozen=True)
class Applied:
    kind: str  # "skill" or "ghost"
    namespace: str
    name: str
    action: str

    def line(self, dry_run: bool) -> str:
        suffix = " (server dry run)" if dry_run else ""
        return f"{self.kind}/{self.namespace}/{self.name} {self.action}{suffix}"


def _package(source: SkillSource) -> tuple[bytes, str]:
    """The folder zipped, and its package name; checked locally first, as `skills push` does."""
    from backend.config import get_settings
    from backend.skills.limits import ArchiveLimits
    from backend.skills.package import read_package

    assert source.folder is not None
    try:
        limits = ArchiveLimits.from_settings(get_settings())
        data = zip_folder(source.folder, limits)
        package = read_package(
            data,
            limits=limits,
            public=source.namespace == "public",
        )
    except SkillhiveError as exc:
        raise CliError(f"{source.source}: {exc.code}: {exc.message}") from None
    return data, package.name


def planned(skills: list[SkillSource], ghosts: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of everything the input holds, known before anything is sent."""
    keys = {
        ("ghost", str(g["metadata"]["namespace"]), str(g["metadata"].get("name"))) for g in ghosts
    }
    for source in skills:
        name = _package(source)[1] if source.folder is not None else source.name
        keys.add(("skill", source.namespace, str(name)))
    return keys


def apply_skill(api: Api, source: SkillSource, *, dry_run: bool) -> Applied:
    data, name = _package(source) if source.folder is not None else (b"", source.name or "")
    if source.name and name != source.name:
        raise CliError(
            f"{source.source}: metadata.name is {source.name!r} but the package in "
            f"{source.folder} is named {name!r}"
        )
    collection = skills_path(source.namespace)
    current = api.request("GET", f"{collection}/{name}", ok=(404,))
    existing: dict[str, Any] | None = current.json() if current.status_code == 200 else None
    query = {"dryRun": "true"} if dry_run else {}
    action = "unchanged"
    if source.folder is not None:
        headers = {"Content-Type": "application/zip"}
        if existing is None:
            api.request("POST", collection, content=data, headers=headers, params=query)
            action = "created"
        elif existing["status"]["sha256"] != hashlib.sha256(data).hexdigest():
            api.request("PUT", f"{collection}/{name}", content=data, headers=headers, params=query)
            action = "configured"
    elif existing is None:
        raise CliError(
            f"{source.source}: skill {source.namespace}/{name} does not exist; give spec.path "
            "(the skill's folder) to upload it",
            ExitCode.NOT_FOUND,
        )
    if source.labels is not None:
        old = (existing or {}).get("metadata", {}).get("labels") or {}
        if source.labels != old:
            if not dry_run:  # PATCH has no dry run; labels are checked by the real call
                api.request("PATCH", f"{collection}/{name}", json={"labels": source.labels})
            action = "created" if action == "created" else "configured"
    return Applied("skill", source.namespace, name, action)


def apply_ghosts(api: Api, documents: list[dict[str, Any]], *, dry_run: bool) -> list[Applied]:
    if not documents:
        return []
    params = {"dryRun": "true"} if dry_run else {}
    result = api.json("POST", "/api/v1/apply", json=documents, params=params)
    applied = []
    for item in result["items"]:
        for warning in item.get("warnings") or []:
            typer.echo(
                f"warning: ghost/{item['namespace']}/{item['name']}: "
                f"{warning.get('code')}: {warning.get('message')}",
                err=True,
            )
        applied.append(Applied("ghost", item["namespace"], item["name"], item["action"]))
    return applied


def split(
    documents: list[Document], skill_folders: list[Path], namespace: str
) -> tuple[list[SkillSource], list[dict[str, Any]]]:
    """Skill sources and Ghost documents; any other kind is refused before anything is sent."""
    skills: list[SkillSource] = []
    ghosts: list[dict[str, Any]] = []
    for document in documents:
        if not isinstance(document.body, dict):
            raise CliError(f"{document.source}: each document must be a mapping (a CRD)")
        kind = document.body.get("kind")
        if kind == "Skill":
            skills.append(skill_source(document, namespace))
        elif kind == "Ghost":
            ghosts.append(clean(document.body, namespace))
        else:
            raise CliError(f"{document.source}: unsupported kind {kind!r} (Skill or Ghost)")
    # A skill folder a `Skill` document points at is applied once, through the document.
    described = {s.folder for s in skills if s.folder is not None}
    folders = [f for f in skill_folders if f.resolve() not in described]
    return [SkillSource(str(f), namespace, None, f) for f in folders] + skills, ghosts


def prune_candidates(
    api: Api, namespaces: set[str], selector: list[Requirement], keep: set[tuple[str, str, str]]
) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of labelled objects in these namespaces not applied now; Ghosts
    first, so a pruned skill is no longer referenced by a pruned Ghost."""
    found: list[tuple[str, str, str]] = []
    for kind, path in (("ghost", ghosts_path), ("skill", skills_path)):
        for namespace in sorted(namespaces):
            for obj in api.items(path(namespace)):
                key = (kind, namespace, obj["metadata"]["name"])
                if matches(obj, selector) and key not in keep:
                    found.append(key)
    return found


def prune(api: Api, targets: list[tuple[str, str, str]]) -> None:
    for kind, namespace, name in targets:
        path = ghosts_path(namespace) if kind == "ghost" else skills_path(namespace)
        try:
            api.request("DELETE", f"{path}/{name}")
        except ApiError as exc:
            message = f"pruning {kind}/{namespace}/{name}: {exc.message}"
            raise CliError(message, exc.exit_code) from None
        typer.echo(f"{kind}/{namespace}/{name} pruned")
