"""Skill storage: the CRD row in `kinds` and the ZIP in `skill_binaries`, always together.

Every write validates the whole package first (pure `read_package`, off the event loop: it
inflates every entry once), then writes row and bytes in one transaction; a refused package
writes nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.db.models import SYSTEM_USER_ID, SkillBinary
from backend.db.types import utcnow
from backend.egress import check_egress
from backend.errors import Conflict, InvalidRequest
from backend.ghosts.references import release_skill
from backend.kinds import store
from backend.kinds.store import Scope
from backend.skills.limits import ArchiveLimits
from backend.skills.package import SkillPackage, read_package, read_package_file

SKILL_KIND = "Skill"
PUBLIC_SCOPE = Scope(SYSTEM_USER_ID, "default")


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


async def _read(data: bytes, settings: Settings, scope: Scope, *, strict: bool) -> SkillPackage:
    public = scope == PUBLIC_SCOPE
    package = await asyncio.to_thread(
        read_package,
        data,
        limits=ArchiveLimits.from_settings(settings),
        public=public,
        strict=strict,
    )
    if not public:  # a user's MCP servers stay within the egress policy (backend.egress)
        urls = {n: s.url for n, s in package.spec.mcp_servers.items() if s.url is not None}
        check_egress(urls, settings.egress, key="server", what="MCP servers")
    return package


def read_builtin(data: bytes, settings: Settings) -> SkillPackage:
    return read_package(data, limits=ArchiveLimits.from_settings(settings), public=True)


async def create(
    session: AsyncSession, settings: Settings, scope: Scope, data: bytes, *, strict: bool = False
) -> dict[str, Any]:
    package = await _read(data, settings, scope, strict=strict)
    crd = _crd(package, scope, labels={}, enabled=True)
    try:
        row = await store.insert(session, SKILL_KIND, scope, package.name, crd)
    except Conflict as exc:
        exc.message += f"; {how_to_replace(scope, package.name)}"
        raise
    # A Core INSERT: the ORM unit of work holds on to (and re-inspects) the 10 MiB value.
    await session.execute(
        insert(SkillBinary).values(
            kind_id=row.id, binary_data=data, file_size=package.size, file_hash=package.sha256
        )
    )
    await session.commit()
    return row.json


async def replace(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    name: str,
    data: bytes,
    *,
    strict: bool = False,
    expected_version: int | None = None,
) -> dict[str, Any]:
    row = await store.get(session, SKILL_KIND, scope, name)
    store.check_version(row, expected_version)
    package = await _read(data, settings, scope, strict=strict)
    if package.name != name:
        raise InvalidRequest(
            f"the package is named {package.name!r}; PUT replaces {name!r} only",
            code="package_name_mismatch",
            details={"expected": name, "found": package.name},
        )
    old = row.json
    crd = _crd(
        package,
        scope,
        labels=old["metadata"].get("labels", {}),
        enabled=old["status"].get("enabled", True),
    )
    await store.replace(session, row, crd, expected=expected_version)
    await session.execute(
        update(SkillBinary)
        .where(SkillBinary.kind_id == row.id)
        .values(
            binary_data=data, file_size=package.size, file_hash=package.sha256, created_at=utcnow()
        )
    )
    await session.commit()
    return row.json


async def patch(
    session: AsyncSession,
    scope: Scope,
    name: str,
    *,
    labels: dict[str, str] | None,
    enabled: bool | None,
    expected_version: int | None = None,
) -> dict[str, Any]:
    row = await store.get(session, SKILL_KIND, scope, name)
    crd = {**row.json, "metadata": dict(row.json["metadata"]), "status": dict(row.json["status"])}
    if labels is not None:
        crd["metadata"]["labels"] = labels
    if enabled is not None:
        crd["status"]["enabled"] = enabled
    await store.replace(session, row, crd, expected=expected_version)
    await session.commit()
    return row.json


async def delete(session: AsyncSession, scope: Scope, name: str, *, force: bool = False) -> None:
    row = await store.get(session, SKILL_KIND, scope, name)
    # Ghosts relying on the skill: 409 `skill_referenced`, or with `force` drop the references.
    await release_skill(session, scope, name, force=force)
    await session.delete(row)  # the binary goes with it (ON DELETE CASCADE)
    await session.commit()


async def get(session: AsyncSession, scope: Scope, name: str) -> dict[str, Any]:
    return (await store.get(session, SKILL_KIND, scope, name)).json


async def package(session: AsyncSession, scope: Scope, name: str) -> StoredPackage:
    row = await store.get(session, SKILL_KIND, scope, name)
    binary = (
        await session.execute(
            select(SkillBinary.binary_data, SkillBinary.file_hash).where(
                SkillBinary.kind_id == row.id
            )
        )
    ).one()
    return StoredPackage(data=binary[0], sha256=binary[1], name=name)


async def package_file(
    session: AsyncSession, settings: Settings, scope: Scope, name: str, path: str
) -> bytes:
    stored = await package(session, scope, name)
    limits = ArchiveLimits.from_settings(settings)
    return await asyncio.to_thread(read_package_file, stored.data, path, limits=limits)


async def by_hash(session: AsyncSession, sha256: str) -> bytes | None:
    """Package bytes by content hash (the chat engine's package source)."""
    return await session.scalar(
        select(SkillBinary.binary_data).where(SkillBinary.file_hash == sha256).limit(1)
    )
