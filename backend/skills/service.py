"""Skill storage: the CRD row in `kinds` and the ZIP in `skill_binaries`, always together.

Every write validates the whole package first (pure `read_package`), then writes row and bytes
in one transaction; a refused package writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.db.models import SYSTEM_USER_ID, SkillBinary
from backend.db.types import utcnow
from backend.errors import InvalidRequest
from backend.ghosts.references import release_skill
from backend.kinds import store
from backend.kinds.store import Scope
from backend.skills.limits import ArchiveLimits
from backend.skills.package import SkillPackage, read_package, read_package_file
from backend.skills.search.index import index_skill

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


def _read(data: bytes, settings: Settings, scope: Scope, *, strict: bool) -> SkillPackage:
    return read_package(
        data,
        limits=ArchiveLimits.from_settings(settings),
        public=scope == PUBLIC_SCOPE,
        strict=strict,
    )


def read_builtin(data: bytes, settings: Settings) -> SkillPackage:
    return _read(data, settings, PUBLIC_SCOPE, strict=False)


async def create(
    session: AsyncSession, settings: Settings, scope: Scope, data: bytes, *, strict: bool = False
) -> dict[str, Any]:
    package = _read(data, settings, scope, strict=strict)
    crd = _crd(package, scope, labels={}, enabled=True)
    row = await store.insert(session, SKILL_KIND, scope, package.name, crd)
    await index_skill(session, row)
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
    package = _read(data, settings, scope, strict=strict)
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
    await index_skill(session, row)
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
    await index_skill(session, row)
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
    return read_package_file(stored.data, path, limits=ArchiveLimits.from_settings(settings))


async def by_hash(session: AsyncSession, sha256: str) -> bytes | None:
    """Package bytes by content hash (the chat engine's package source)."""
    return await session.scalar(
        select(SkillBinary.binary_data).where(SkillBinary.file_hash == sha256).limit(1)
    )
