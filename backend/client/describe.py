"""`skillhive describe skill NAME`: the skill, its warnings, files, versions and the Ghosts
that use it (by name in `spec.skills`, or through `spec.skillSelector`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from backend.client.api import Api, connect, ghosts_path, skills_path
from backend.client.errors import ApiError
from backend.crd.common import parse_skill_ref


def _selected(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics; no selector selects nothing, `{}` everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, op, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if op == "In" and (not present or labels[key] not in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _users(api: Api, skill: dict[str, Any]) -> list[str]:
    name, namespace = skill["metadata"]["name"], skill["metadata"]["namespace"]
    labels = skill["metadata"].get("labels") or {}
    public = namespace == "public"
    found = []
    for ghost_ns in ["public"] if public else [namespace, "public"]:
        try:
            ghosts = api.items(ghosts_path(ghost_ns))
        except ApiError:
            continue
        for ghost in ghosts:
            spec = ghost.get("spec", {})
            listed = name in [parse_skill_ref(r).name for r in spec.get("skills") or []]
            wants_public = spec.get("includePublicSkills") and public
            own = not public and ghost_ns == namespace
            selected = bool(wants_public) or (own and _selected(spec.get("skillSelector"), labels))
            if listed or selected:
                how = "listed" if listed else "selected"
                found.append(f"ghost/{ghost_ns}/{ghost['metadata']['name']} ({how})")
    return found


def describe_skill(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace (`public` for public).")
    ] = None,
) -> None:
    """Show a skill: warnings, files, versions and the Ghosts that use it."""
    with connect() as api:
        path = skills_path(namespace or api.config.namespace)
        skill = api.json("GET", f"{path}/{name}")
        versions = api.json("GET", f"{path}/{name}/versions")["items"]
        users = _users(api, skill)
    meta, spec, status = skill["metadata"], skill["spec"], skill["status"]
    labels = ",".join(f"{k}={v}" for k, v in sorted((meta.get("labels") or {}).items()))
    rows = [
        ("Name", meta["name"]),
        ("Namespace", meta["namespace"]),
        ("Description", spec.get("description", "")),
        ("Labels", labels or "<none>"),
        ("Tags", ", ".join(spec.get("tags") or []) or "<none>"),
        ("Enabled", str(status.get("enabled", True)).lower()),
        ("Resource version", str(meta.get("resourceVersion", ""))),
        ("SHA256", status.get("sha256", "")),
        ("Size", f"{status.get('size', 0)} bytes"),
    ]
    for label, value in rows:
        typer.echo(f"{label + ':':<18}{value}")
    warnings = status.get("warnings") or []
    typer.echo(f"Warnings:{'' if warnings else ' <none>'}")
    for w in warnings:
        typer.echo(f"  {w['code']}: {w['message']}")
    typer.echo("Files:")
    for f in spec.get("files") or []:
        typer.echo(f"  {f['path']}  {f['size']} bytes")
    typer.echo("Versions:")
    for v in versions:
        typer.echo(
            f"  v{v['version']}  {v['created_at'][:19]}  {v['sha256'][:12]}  {v['size']} bytes  "
            f"{v['source'].get('type', '?')}"
        )
    typer.echo(f"Used by:{'' if users else ' <none>'}")
    for user in users:
        typer.echo(f"  {user}")
