"""Skill storage: the CRD row in `kinds` and its package versions (`backend.skills.versions`).

Every write validates the whole package first (pure `read_package`, off the event loop: it
inflates every entry once), then writes row and a new version in one transaction; a refused
package writes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.crd.common import SYSTEM_LABEL_PREFIX
from backend.db.models import SYSTEM_USER_ID, Kind
from backend.egress import check_egress
from backend.errors import Conflict, InvalidRequest, NotFound
from backend.ghosts import check_user_namespace
from backend.ghosts.pins import pinned_versions
from backend.ghosts.references import release_skill
from backend.ghosts.validation import check_stdio_servers
from backend.kinds import store
from backend.kinds.store import Scope
from backend.ops.quotas import Limit, check_stored
from backend.plugins import naming
from backend.skills import versions
from backend.skills.importing.tree import BuiltZip
from backend.skills.limits import ArchiveLimits
from backend.skills.package import SkillPackage, read_package, read_package_file
from backend.skills.search.index import index_skill
from backend.skills.versions import VersionInfo

SKILL_KIND = "Skill"
PUBLIC_SCOPE = Scope(SYSTEM_USER_ID, "default")
UPLOAD: dict[str, Any] = {"type": "upload"}


@dataclass(frozen=True)
class StoredPackage:
    data: bytes
    sha256: str
    name: str


def _crd(
    package: SkillPackage, scope: Scope, *, labels: dict[str, str], enabled: bool
) -> dict[str, Any]:
    crd = package.to_crd(namespace=scope.namespace, labels=labels, enabled=enabled)
    return crd.model_dump(mode="json", exclude_none=True)


def _not_plugin_owned(name: str) -> None:
    """A plugin's skill changes with its plugin: PUT and DELETE of it are 409 `plugin_owned`."""
    if naming.is_plugin_skill(name):
        plugin = name.split(naming.SEPARATOR, 1)[0]
        raise Conflict(
            f"skill {name!r} belongs to plugin {plugin!r}: import the plugin again to change "
            "its skills, or delete the plugin",
            code="plugin_owned",
            details={"skill": name, "plugin": plugin},
        )


def how_to_replace(scope: Scope, name: str) -> str:
    """The `skill_exists` hint: both ways to replace a skill."""
    if scope == PUBLIC_SCOPE:
        url, option = f"/api/v1/public/skills/{name}", "--public"
    else:
        url = f"/api/v1/namespaces/{scope.namespace}/skills/{name}"
        option = f"--namespace {scope.namespace}"
    return (
        f"to replace it, PUT the package to {url} or run "
        f"`skillhive skills push <folder> {option}` (it replaces an existing skill)"
    )


async def _read(
    data: bytes,
    settings: Settings,
    scope: Scope,
    *,
    strict: bool,
    verify: bool = True,
    sha256: str | None = None,
) -> SkillPackage:
    """`sha256`: the digest this process took as the bytes arrived (`api.upload.Received`)."""
    public = scope == PUBLIC_SCOPE
    package = await asyncio.to_thread(
        read_package,
        data,
        limits=ArchiveLimits.from_settings(settings),
        public=public,
        strict=strict,
        verify=verify,
        sha256=sha256,
    )
    check_stdio_servers(package.spec.mcp_servers, trusted=public)  # only public skills start any
    if not public:  # a user's MCP servers stay within the egress policy (backend.egress)
        urls = {n: s.url for n, s in package.spec.mcp_servers.items() if s.url is not None}
        check_egress(urls, settings.egress, key="server", what="MCP servers")
    return package


def read_builtin(data: bytes, settings: Settings) -> SkillPackage:
    return read_package(data, limits=ArchiveLimits.from_settings(settings), public=True)


async def _record(
    session: AsyncSession,
    settings: Settings,
    row: Kind,
    *,
    data: bytes | None,
    actor: int | None,
    source: dict[str, Any],
    new: bool = False,
) -> int:
    """Record the row's package as its next version (`new`: the row is new)."""
    status = row.json["status"]
    return await versions.record(
        session,
        row.id,
        row.json,
        sha256=status["sha256"],
        size=status["size"],
        data=data,
        created_by=row.user_id if actor is None else actor,
        source=source,
        retain=settings.skill_versions_retain,
        pinned=lambda: pinned_versions(session, Scope(row.user_id, row.namespace), row.name),
        new=new,
    )


async def create(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    data: bytes,
    *,
    strict: bool = False,
    actor: int | None = None,
    source: dict[str, Any] = UPLOAD,
    source_in_status: bool = False,
    dry_run: bool = False,
    sha256: str | None = None,
) -> dict[str, Any]:
    """The stored CRD; with `dry_run` every check and write runs, then rolls back. `sha256`:
    the digest of `data`, when this process took it as the bytes arrived."""
    check_user_namespace(scope, "skills")
    package = await _read(data, settings, scope, strict=strict, sha256=sha256)
    await check_stored(session, settings, scope.user_id, {"skills": 1, "skill_bytes": len(data)})
    crd = _crd(package, scope, labels={}, enabled=True)
    if source_in_status:  # e.g. installed from a conversation's artifact
        crd["status"]["source"] = source
    try:
        row = await store.insert(session, SKILL_KIND, scope, package.name, crd)
    except Conflict as exc:
        exc.message += f"; {how_to_replace(scope, package.name)}"
        raise
    await _record(session, settings, row, data=data, actor=actor, source=source, new=True)
    await index_skill(session, row, new=True)
    return await _finish(session, row, dry_run=dry_run)


async def _finish(session: AsyncSession, row: Kind, *, dry_run: bool) -> dict[str, Any]:
    """Commit, or (a dry run) roll back: the answer is the CRD as it would have been stored."""
    crd: dict[str, Any] = row.json
    if dry_run:
        await session.rollback()
    else:
        await session.commit()
    return crd


async def replace(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    name: str,
    data: bytes,
    *,
    strict: bool = False,
    expected_version: int | None = None,
    actor: int | None = None,
    source: dict[str, Any] = UPLOAD,
    dry_run: bool = False,
    sha256: str | None = None,
) -> dict[str, Any]:
    """The replaced CRD, as `create` says."""
    check_user_namespace(scope, "skills")
    row = await store.get(session, SKILL_KIND, scope, name)
    store.check_version(row, expected_version)
    _not_plugin_owned(name)
    package = await _read(data, settings, scope, strict=strict, sha256=sha256)
    if package.name != name:
        raise InvalidRequest(
            f"the package is named {package.name!r}; PUT replaces {name!r} only",
            code="package_name_mismatch",
            details={"expected": name, "found": package.name},
        )
    await check_stored(session, settings, scope.user_id, {"skill_bytes": len(data)})
    old = row.json
    crd = _crd(
        package,
        scope,
        labels=old["metadata"].get("labels", {}),
        enabled=old["status"].get("enabled", True),
    )
    await store.replace(session, row, crd, expected=expected_version)
    await index_skill(session, row)
    await _record(session, settings, row, data=data, actor=actor, source=source)
    return await _finish(session, row, dry_run=dry_run)


@dataclass(frozen=True)
class Upserted:
    result: Literal["created", "updated", "unchanged"]
    crd: dict[str, Any]
    version: int


async def upsert(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    built: BuiltZip,
    *,
    source: dict[str, Any],
    actor: int | None = None,
) -> Upserted:
    """Create the package's skill, or replace it when the bytes differ (imports and syncs).

    `built` is the ZIP the import wrote from the fetched files: read without re-inflating its
    entries (their headers are ours), every package rule still applied.

    `source` ({url, ref, commit, path}) goes to `status.source`; the same bytes make no new
    version (a changed source, e.g. a new commit with the same files, is recorded in place).
    """
    check_user_namespace(scope, "skills")
    data = built.data
    package = await _read(data, settings, scope, strict=False, verify=False)
    try:
        row: Kind | None = await store.get(session, SKILL_KIND, scope, package.name)
    except NotFound:
        row = None
    labels = {} if row is None else row.json["metadata"].get("labels", {})
    enabled = True if row is None else row.json["status"].get("enabled", True)
    crd = _crd(package, scope, labels=labels, enabled=enabled)
    crd["status"]["source"] = source
    history = {"type": "import", **source}
    if row is None or row.json["status"]["sha256"] != package.sha256:
        adding: dict[Limit, int] = {"skills": int(row is None), "skill_bytes": len(data)}
        await check_stored(session, settings, scope.user_id, adding)
    if row is None:
        row = await store.insert(session, SKILL_KIND, scope, package.name, crd)
        result: Literal["created", "updated"] = "created"
    elif row.json["status"]["sha256"] == package.sha256:
        if row.json["status"].get("source") != source:
            kept = {**row.json, "status": {**row.json["status"], "source": source}}
            await store.replace(session, row, kept)
            await session.commit()
        latest = await versions.list_versions(session, row.id)
        return Upserted("unchanged", row.json, latest[0].version)
    else:
        await store.replace(session, row, crd)
        result = "updated"
    await index_skill(session, row)
    number = await _record(session, settings, row, data=data, actor=actor, source=history)
    await session.commit()
    return Upserted(result, row.json, number)


async def rollback(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    name: str,
    number: int,
    *,
    actor: int | None = None,
    expected_version: int | None = None,
) -> dict[str, Any]:
    """A new version whose package and spec are version `number`'s (bytes shared by hash).

    Labels and `enabled` stay as they are now: they belong to the skill, not to a package.
    """
    check_user_namespace(scope, "skills")
    row = await store.get(session, SKILL_KIND, scope, name)
    store.check_version(row, expected_version)
    old = await versions.crd_of(session, row.id, number)
    await check_stored(session, settings, scope.user_id, {"skill_bytes": old["status"]["size"]})
    current = row.json
    crd = {
        **old,
        "metadata": {**old["metadata"], "labels": current["metadata"].get("labels", {})},
        "status": {**old["status"], "enabled": current["status"].get("enabled", True)},
    }
    await store.replace(session, row, crd, expected=expected_version)
    await index_skill(session, row)
    source = {"type": "rollback", "version": number}
    await _record(session, settings, row, data=None, actor=actor, source=source)
    await session.commit()
    return row.json


def _system_labels(crd: Mapping[str, Any], wanted: Mapping[str, str]) -> dict[str, str]:
    """The service's own labels of a stored skill (`SYSTEM_LABEL_PREFIX`), which a labels
    PATCH keeps; 422 `reserved_label` when `wanted` names one (a user does not claim a skill
    for a plugin, nor unclaim it)."""
    reserved = sorted(k for k in wanted if k.startswith(SYSTEM_LABEL_PREFIX))
    if reserved:
        raise InvalidRequest(
            f"labels under {SYSTEM_LABEL_PREFIX!r} are the service's own: {', '.join(reserved)}",
            code="reserved_label",
            details={"labels": reserved},
        )
    current: Mapping[str, str] = crd["metadata"].get("labels") or {}
    return {k: v for k, v in current.items() if k.startswith(SYSTEM_LABEL_PREFIX)}


async def patch(
    session: AsyncSession,
    scope: Scope,
    name: str,
    *,
    labels: dict[str, str] | None,
    enabled: bool | None,
    expected_version: int | None = None,
) -> dict[str, Any]:
    check_user_namespace(scope, "skills")
    row = await store.get(session, SKILL_KIND, scope, name)
    crd = {**row.json, "metadata": dict(row.json["metadata"]), "status": dict(row.json["status"])}
    if labels is not None:
        crd["metadata"]["labels"] = {**labels, **_system_labels(row.json, labels)}
    if enabled is not None:
        crd["status"]["enabled"] = enabled
    await store.replace(session, row, crd, expected=expected_version)
    await index_skill(session, row)
    await session.commit()
    return row.json


async def delete(session: AsyncSession, scope: Scope, name: str, *, force: bool = False) -> None:
    row = await store.get(session, SKILL_KIND, scope, name)
    _not_plugin_owned(name)
    # Ghosts relying on the skill: 409 `skill_referenced`, or with `force` drop the references.
    await release_skill(session, scope, name, force=force)
    hashes = await versions.hashes_of(session, row.id)
    await session.delete(row)  # its versions go with it (ON DELETE CASCADE)
    await session.flush()
    await versions.collect(session, hashes)  # and the bytes no other version uses
    await session.commit()


async def get(session: AsyncSession, scope: Scope, name: str) -> dict[str, Any]:
    return (await store.get(session, SKILL_KIND, scope, name)).json


async def package(session: AsyncSession, scope: Scope, name: str) -> StoredPackage:
    row = await store.get(session, SKILL_KIND, scope, name)
    data, sha256 = await versions.package_of(session, row.id, None)
    return StoredPackage(data=data, sha256=sha256, name=name)


async def version_list(session: AsyncSession, scope: Scope, name: str) -> list[VersionInfo]:
    row = await store.get(session, SKILL_KIND, scope, name)
    return await versions.list_versions(session, row.id)


async def version_crd(
    session: AsyncSession, scope: Scope, name: str, number: int
) -> dict[str, Any]:
    row = await store.get(session, SKILL_KIND, scope, name)
    return await versions.crd_of(session, row.id, number)


async def version_package(
    session: AsyncSession, scope: Scope, name: str, number: int
) -> StoredPackage:
    row = await store.get(session, SKILL_KIND, scope, name)
    data, sha256 = await versions.package_of(session, row.id, number)
    return StoredPackage(data=data, sha256=sha256, name=name)


async def package_file(
    session: AsyncSession, settings: Settings, scope: Scope, name: str, path: str
) -> bytes:
    stored = await package(session, scope, name)
    limits = ArchiveLimits.from_settings(settings)
    return await asyncio.to_thread(read_package_file, stored.data, path, limits=limits)


async def by_hash(session: AsyncSession, sha256: str) -> bytes | None:
    """Package bytes by content hash (the chat engine's package source)."""
    return await versions.blob(session, sha256)
