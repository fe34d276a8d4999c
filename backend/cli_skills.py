"""`skillhive skills ...`: validate locally, push through the API, sync the built-in skills."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import httpx
import typer

from backend.client.api import connect
from backend.client.errors import ApiError, unreachable
from backend.config import get_settings
from backend.crd.skill import SkillWarning
from backend.errors import SkillhiveError
from backend.skills.folder import zip_folder
from backend.skills.limits import ArchiveLimits
from backend.skills.package import SkillPackage, read_package

app = typer.Typer(
    help="Skill packages: validate, push, history, rollback, sync built-ins.", no_args_is_help=True
)

CHUNK = 256 * 1024
PROGRESS_FROM_BYTES = 1024 * 1024  # show a progress bar for archives larger than this


def fail(message: str) -> NoReturn:
    """One `error:` line on stderr and exit status 1: what a person sees for an expected failure."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _archive_bytes(path: Path) -> bytes:
    if path.is_dir():
        try:
            return zip_folder(path, ArchiveLimits.from_settings(get_settings()))
        except SkillhiveError as exc:  # a FIFO or a symlink in it, too many files or bytes
            fail(f"{exc.code}: {exc.message}")
    if path.is_file():
        return path.read_bytes()
    fail(f"{path} is neither a folder nor a file")


def _print_warnings(warnings: list[SkillWarning] | tuple[SkillWarning, ...]) -> None:
    for w in warnings:
        typer.echo(f"warning: {w.code}: {w.message}")


def _validate(data: bytes, *, strict: bool, public: bool) -> SkillPackage:
    limits = ArchiveLimits.from_settings(get_settings())
    try:
        return read_package(data, limits=limits, strict=strict, public=public)
    except SkillhiveError as exc:
        typer.echo(f"error: {exc.code}: {exc.message}", err=True)
        for key, value in exc.details.items():
            typer.echo(f"  {key}: {value}", err=True)
        raise typer.Exit(1) from exc


@app.command()
def validate(
    path: Annotated[Path, typer.Argument(help="A skill folder or a ZIP archive.")],
    strict: Annotated[bool, typer.Option(help="Treat every warning as an error.")] = False,
    public: Annotated[bool, typer.Option(help="Validate as a public (admin) skill.")] = False,
) -> None:
    """Check a skill package: errors exit with code 1, warnings are listed."""
    package = _validate(_archive_bytes(path), strict=strict, public=public)
    _print_warnings(package.warnings)
    typer.echo(f"ok: {package.name} ({len(package.files)} files, {package.size} bytes)")


def _chunks(data: bytes, label: str) -> Iterator[bytes]:
    if len(data) < PROGRESS_FROM_BYTES:
        yield data
        return
    with typer.progressbar(length=len(data), label=label) as bar:
        for start in range(0, len(data), CHUNK):
            yield data[start : start + CHUNK]
            bar.update(min(CHUNK, len(data) - start))


def _send(client: httpx.Client, method: str, url: str, data: bytes) -> httpx.Response:
    return client.request(
        method,
        url,
        content=_chunks(data, f"uploading {len(data) // 1024} KiB"),
        headers={"Content-Type": "application/zip", "Content-Length": str(len(data))},
    )


@contextmanager
def _api() -> Iterator[httpx.Client]:
    """A client for the API at SKILLHIVE_URL with SKILLHIVE_TOKEN (each else from the config
    file); an unreachable API is one error line (exit status 5), not a traceback."""
    with connect() as api:
        try:
            yield api.http
        except httpx.TransportError as exc:
            raise unreachable(api.config.url, exc) from None


def _collection(namespace: str, public: bool) -> str:
    return "/api/v1/public/skills" if public else f"/api/v1/namespaces/{namespace}/skills"


def _fail_on_error(response: httpx.Response) -> None:
    """An error answer ends the command: exit status by its HTTP status (backend.client)."""
    if response.status_code >= 400:
        raise ApiError(response)


@app.command()
def push(
    path: Annotated[Path, typer.Argument(help="A skill folder (zipped for you) or a ZIP.")],
    namespace: Annotated[str, typer.Option(help="Target namespace.")] = "default",
    public: Annotated[bool, typer.Option(help="Publish as a public skill (admins).")] = False,
    strict: Annotated[bool, typer.Option(help="Refuse the upload on any warning.")] = False,
) -> None:
    """Upload (or replace) a skill through the API [SKILLHIVE_URL, SKILLHIVE_TOKEN, else the
    config file of `skillhive login`; default URL http://127.0.0.1:$SKILLHIVE_PORT]."""
    data = _archive_bytes(path)
    cap = get_settings().max_archive_bytes
    if len(data) > cap:  # the server would refuse it: do not send megabytes to hear that
        typer.echo(
            f"error: archive_too_large: the archive is {len(data)} bytes, the limit is {cap} "
            "(SKILLHIVE_MAX_ARCHIVE_BYTES)",
            err=True,
        )
        raise typer.Exit(1)
    package = _validate(data, strict=strict, public=public)  # fail fast, before uploading
    collection = _collection(namespace, public)
    query = "?strict=true" if strict else ""
    with _api() as client:
        response = _send(client, "POST", collection + query, data)
        if response.status_code == 409:
            response = _send(client, "PUT", f"{collection}/{package.name}{query}", data)
    _fail_on_error(response)
    crd = response.json()
    _print_warnings([SkillWarning.model_validate(w) for w in crd["status"]["warnings"]])
    verb = "created" if response.status_code == 201 else "replaced"
    version = crd["metadata"]["resourceVersion"]
    typer.echo(f"{verb} {crd['metadata']['namespace']}/{crd['metadata']['name']} (v{version})")


NamespaceOption = Annotated[str, typer.Option(help="The skill's namespace.")]
PublicOption = Annotated[bool, typer.Option(help="A public skill.")]


@app.command()
def history(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    namespace: NamespaceOption = "default",
    public: PublicOption = False,
) -> None:
    """List a skill's kept package versions, newest first."""
    with _api() as client:
        response = client.get(f"{_collection(namespace, public)}/{name}/versions")
    _fail_on_error(response)
    for item in response.json()["items"]:
        source = item["source"].get("type", "?")
        if "version" in item["source"]:
            source += f" of v{item['source']['version']}"
        typer.echo(
            f"v{item['version']}  {item['created_at']}  {item['sha256'][:12]}  "
            f"{item['size']} bytes  {source}"
        )


@app.command()
def rollback(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    version: Annotated[int, typer.Argument(help="The version to bring back.", min=1)],
    namespace: NamespaceOption = "default",
    public: PublicOption = False,
) -> None:
    """Make version VERSION's package current again (recorded as a new version)."""
    with _api() as client:
        response = client.post(
            f"{_collection(namespace, public)}/{name}/rollback", json={"version": version}
        )
    _fail_on_error(response)
    crd = response.json()
    typer.echo(
        f"rolled back {crd['metadata']['namespace']}/{crd['metadata']['name']} to v{version} "
        f"(resourceVersion {crd['metadata']['resourceVersion']})"
    )


@app.command()
def install(
    conversation: Annotated[str, typer.Argument(help="The conversation whose turn wrote it.")],
    artifact: Annotated[str, typer.Argument(help="The artifact: a skill ZIP or folder archive.")],
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Target namespace [config file].")
    ] = None,
) -> None:
    """Install a skill package a chat turn wrote as a conversation artifact."""
    with connect() as api:
        ns = namespace or api.config.namespace
        crd = api.json(
            "POST",
            f"/api/v1/namespaces/{ns}/skills/install",
            json={"conversation": conversation, "artifact": artifact},
        )
    _print_warnings([SkillWarning.model_validate(w) for w in crd["status"]["warnings"]])
    meta = crd["metadata"]
    typer.echo(
        f"installed {meta['namespace']}/{meta['name']} (v{meta.get('resourceVersion', '?')}) "
        f"from {conversation}/{artifact}"
    )


@app.command()
def sync() -> None:
    """Upsert the built-in skills (`skills/`) as public skills whose content changed."""
    from backend.db.engine import create_engine, create_sessionmaker
    from backend.skills.builtin import sync_builtin_skills

    settings = get_settings()

    async def main() -> None:
        engine = create_engine(settings.effective_database_url)
        try:
            for result in await sync_builtin_skills(create_sessionmaker(engine), settings):
                typer.echo(f"{result.name}: {result.action}")
        finally:
            await engine.dispose()

    asyncio.run(main())
