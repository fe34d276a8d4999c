"""`skillhive login|apply|get|delete|describe`: the kubectl habits over the REST API."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from backend.client import config
from backend.client.api import Api, connect, ghosts_path, skills_path
from backend.client.apply import (
    Applied,
    apply_ghosts,
    apply_skill,
    planned,
    prune,
    prune_candidates,
    split,
)
from backend.client.documents import read_inputs
from backend.client.errors import CliError, ExitCode
from backend.client.output import (
    CONVERSATION_COLUMNS,
    CONVERSATION_WIDE,
    GHOST_COLUMNS,
    GHOST_WIDE,
    SKILL_COLUMNS,
    SKILL_WIDE,
    dump_json,
    dump_yaml,
    matches,
    parse_selector,
    table,
)


class Output(StrEnum):
    table = "table"
    wide = "wide"
    yaml = "yaml"
    json = "json"


class DryRun(StrEnum):
    none = "none"
    server = "server"


KINDS = {
    "skill": "skills",
    "skills": "skills",
    "ghost": "ghosts",
    "ghosts": "ghosts",
    "conversation": "conversations",
    "conversations": "conversations",
}


def _kind(value: str) -> str:
    try:
        return KINDS[value.lower()]
    except KeyError:
        raise typer.BadParameter("one of skills, ghosts, conversations") from None


def complete_kind(incomplete: str) -> list[str]:
    return [k for k in ("skills", "ghosts", "conversations") if k.startswith(incomplete)]


Namespace = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Namespace [config file; SKILLHIVE_NAMESPACE]."),
]
Selector = Annotated[
    str | None,
    typer.Option("--selector", "-l", help="Label selector: k=v, k!=v, k, !k (comma = and)."),
]
KindArg = Annotated[
    str,
    typer.Argument(
        help="skills, ghosts or conversations.", callback=_kind, autocompletion=complete_kind
    ),
]


def login(
    url: Annotated[str | None, typer.Option(help="The API's base URL.")] = None,
    token: Annotated[
        str | None, typer.Option(help="An API token (else prompted, or read from stdin).")
    ] = None,
    namespace: Annotated[str | None, typer.Option(help="Default namespace.")] = None,
) -> None:
    """Check an API token with /api/v1/me and store URL, token and namespace in the config file
    (`$XDG_CONFIG_HOME/skillhive/config.yaml`, default `~/.config`; written 0600)."""
    stored = config.read_file()
    interactive = sys.stdin.isatty()
    if url is None:
        url = stored.get("url") or config.default_url()
        if interactive:
            url = typer.prompt("API URL", default=url)
    if token is None:  # prompted, or read from a pipe: a token in argv shows in `ps`
        token = typer.prompt("API token", hide_input=True) if interactive else sys.stdin.readline()
        if not token.strip():
            raise CliError("no token: give --token, or pipe it on stdin", ExitCode.USAGE)
    namespace = namespace or stored.get("namespace") or config.DEFAULT_NAMESPACE
    cfg = config.ClientConfig(url=url.rstrip("/"), token=token.strip(), namespace=namespace)
    with connect(cfg=cfg) as api:
        me = api.json("GET", "/api/v1/me")
    path = config.save({"url": cfg.url, "token": cfg.token or "", "namespace": namespace})
    typer.echo(f"logged in to {cfg.url} as {me['name']} (namespace {namespace}); saved {path}")


def apply(
    filename: Annotated[
        list[str],
        typer.Option("--filename", "-f", help="File, folder or - (stdin); repeatable."),
    ],
    namespace: Namespace = None,
    dry_run: Annotated[
        DryRun, typer.Option("--dry-run", help="server: the API checks everything, writes nothing.")
    ] = DryRun.none,
    prune_: Annotated[
        bool,
        typer.Option("--prune", help="Delete objects matching -l that are not in the input."),
    ] = False,
    selector: Selector = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Prune without asking.")] = False,
) -> None:
    """Create or update Skills and Ghosts from YAML/JSON documents, folders and skill folders."""
    requirements = parse_selector(selector)
    if prune_ and not requirements:
        raise CliError("--prune needs a label selector (-l key=value)", ExitCode.USAGE)
    documents, folders = read_inputs(filename)
    with connect() as api:
        ns = namespace or api.config.namespace
        skills, ghosts = split(documents, folders, ns)
        if not skills and not ghosts:
            raise CliError("no objects to apply")
        server = dry_run is DryRun.server
        targets: list[tuple[str, str, str]] = []
        if prune_:  # asked before anything is written
            keep = planned(skills, ghosts)
            namespaces = {key[1] for key in keep} | {ns}
            targets = prune_candidates(api, namespaces, requirements, keep)
            if not server and not yes:
                _confirm(targets)
        done: list[Applied] = []
        for source in skills:
            applied = apply_skill(api, source, dry_run=server)
            typer.echo(applied.line(server))
            done.append(applied)
        for applied in apply_ghosts(api, ghosts, dry_run=server):
            typer.echo(applied.line(server))
            done.append(applied)
        if server:
            for kind, namespace, name in targets:
                typer.echo(f"{kind}/{namespace}/{name} pruned (server dry run)")
        else:
            prune(api, targets)


def _confirm(targets: list[tuple[str, str, str]]) -> None:
    if not targets:
        return
    names = [f"{kind}/{ns}/{name}" for kind, ns, name in targets]
    if not sys.stdin.isatty():
        raise CliError(f"would prune {', '.join(names)}: confirm with --yes", ExitCode.USAGE)
    typer.echo("\n".join(f"  {name}" for name in names))
    if not typer.confirm(f"Apply, then delete these {len(names)} objects?"):
        raise CliError("nothing applied, nothing pruned")


def _fetch(api: Api, kind: str, name: str | None, namespace: str) -> list[dict[str, Any]]:
    if kind == "conversations":
        path = "/api/v1/conversations"
    else:
        path = skills_path(namespace) if kind == "skills" else ghosts_path(namespace)
    if name is not None:
        return [api.json("GET", f"{path}/{name}")]
    return api.items(path)


def get(
    kind: KindArg,
    name: Annotated[str | None, typer.Argument(help="One object by name (id).")] = None,
    namespace: Namespace = None,
    output: Annotated[Output, typer.Option("--output", "-o", help="Output format.")] = Output.table,
    selector: Selector = None,
) -> None:
    """List objects, or show one; `-o yaml` prints what `apply -f` takes back."""
    requirements = parse_selector(selector)
    with connect() as api:
        objects = _fetch(api, kind, name, namespace or api.config.namespace)
    objects = [o for o in objects if matches(o, requirements)]
    if output is Output.yaml:
        typer.echo(dump_yaml(objects), nl=False)
    elif output is Output.json:
        typer.echo(dump_json(objects, single=name is not None))
    else:
        columns, wide = {
            "skills": (SKILL_COLUMNS, SKILL_WIDE),
            "ghosts": (GHOST_COLUMNS, GHOST_WIDE),
            "conversations": (CONVERSATION_COLUMNS, CONVERSATION_WIDE),
        }[kind]
        table(objects, columns + wide if output is Output.wide else columns)


def delete(
    kind: KindArg,
    name: Annotated[str, typer.Argument(help="The object's name (a conversation's id).")],
    namespace: Namespace = None,
    force: Annotated[
        bool, typer.Option(help="A skill Ghosts use: remove it from them too (the API's force).")
    ] = False,
) -> None:
    """Delete one object."""
    with connect() as api:
        ns = namespace or api.config.namespace
        if kind == "conversations":
            api.request("DELETE", f"/api/v1/conversations/{name}")
            typer.echo(f"conversation/{name} deleted")
            return
        path = skills_path(ns) if kind == "skills" else ghosts_path(ns)
        params = {"force": "true"} if force and kind == "skills" else {}
        api.request("DELETE", f"{path}/{name}", params=params)
    typer.echo(f"{kind[:-1]}/{ns}/{name} deleted")
