"""Skill package versions: immutable rows in `skill_versions`, bytes in `skill_blobs` by hash.

Every package change records a version in the writer's transaction; the newest version is the
current package. Identical bytes are stored once, whichever skills and versions use them, and a
blob goes only when no version refers to it any more.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, exists, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from backend.db.models import SkillBlob, SkillVersion
from backend.db.types import utcnow
from backend.errors import NotFound


class VersionNotFoundError(NotFound):
    """A version number the skill does not have (any more)."""


@dataclass(frozen=True)
class VersionInfo:
    version: int
    sha256: str
    size: int
    created_at: datetime
    created_by: int | None
    source: dict[str, Any]


_INFO_COLUMNS = (
    SkillVersion.number,
    SkillVersion.sha256,
    SkillVersion.size,
    SkillVersion.created_at,
    SkillVersion.created_by,
    SkillVersion.source,
)


async def _store_blob(session: AsyncSession, sha256: str, data: bytes) -> None:
    """Insert the bytes unless that hash is already stored (a concurrent writer may race us)."""
    dialect = session.get_bind().dialect.name
    values = {"sha256": sha256, "data": data, "size": len(data), "created_at": utcnow()}
    if dialect == "postgresql":
        stmt: Any = postgresql.insert(SkillBlob).values(**values).on_conflict_do_nothing()
    else:
        stmt = sqlite.insert(SkillBlob).values(**values).on_conflict_do_nothing()
    await session.execute(stmt)


async def _has_blob(session: AsyncSession, sha256: str) -> bool:
    return bool(await session.scalar(select(exists().where(SkillBlob.sha256 == sha256))))


async def record(
    session: AsyncSession,
    kind_id: int,
    crd: dict[str, Any],
    *,
    sha256: str,
    size: int,
    data: bytes | None,
    created_by: int | None,
    source: dict[str, Any],
    retain: int,
    pinned: Callable[[], Awaitable[Collection[int]]],
    new: bool = False,
) -> int:
    """Add the next version of skill `kind_id`: its CRD as stored and package `sha256`.

    `data` may be None when the bytes are already stored (a rollback). Older versions beyond
    `retain` are pruned, except the `pinned` numbers (those some Ghost pins:
    `backend.ghosts.pins.pinned_versions`), asked for only then. `new`: the skill's row was
    inserted in this transaction, so this is version 1. Returns the new version number.
    """
    if data is not None and not await _has_blob(session, sha256):
        await _store_blob(session, sha256, data)
    last = None
    if not new:
        last = await session.scalar(
            select(func.max(SkillVersion.number)).where(SkillVersion.kind_id == kind_id)
        )
    number = (last or 0) + 1
    # A Core INSERT: the ORM unit of work would keep (and re-inspect) the CRD object.
    await session.execute(
        insert(SkillVersion).values(
            kind_id=kind_id,
            number=number,
            sha256=sha256,
            size=size,
            crd=crd,
            created_at=utcnow(),
            created_by=created_by,
            source=source,
        )
    )
    # Versions are numbered from 1, so a skill has at most `number` of them: none to prune
    # until `number` passes `retain` (a new skill's upload skips both reads).
    if number > retain:
        await prune(session, kind_id, retain=retain, pinned=await pinned())
    return number


async def prune(
    session: AsyncSession, kind_id: int, *, retain: int, pinned: Collection[int] = ()
) -> list[int]:
    """Drop versions older than the newest `retain` (never a pinned one); returns their numbers."""
    numbers = list(
        await session.scalars(
            select(SkillVersion.number)
            .where(SkillVersion.kind_id == kind_id)
            .order_by(SkillVersion.number.desc())
            .offset(retain)
        )
    )
    doomed = [n for n in numbers if n not in set(pinned)]
    if not doomed:
        return []
    hashes = set(
        await session.scalars(
            select(SkillVersion.sha256).where(
                SkillVersion.kind_id == kind_id, SkillVersion.number.in_(doomed)
            )
        )
    )
    await session.execute(
        delete(SkillVersion).where(SkillVersion.kind_id == kind_id, SkillVersion.number.in_(doomed))
    )
    await collect(session, hashes)
    return doomed


async def collect(session: AsyncSession, hashes: Collection[str]) -> None:
    """Delete the blobs among `hashes` that no version refers to any more."""
    if not hashes:
        return
    used = exists().where(SkillVersion.sha256 == SkillBlob.sha256)
    await session.execute(delete(SkillBlob).where(SkillBlob.sha256.in_(list(hashes)), ~used))


async def hashes_of(session: AsyncSession, kind_id: int) -> set[str]:
    return set(
        await session.scalars(
            select(SkillVersion.sha256).where(SkillVersion.kind_id == kind_id).distinct()
        )
    )


async def existing(
    session: AsyncSession, wanted: Collection[tuple[int, int]]
) -> set[tuple[int, int]]:
    """Which of the (skill kind_id, version number) pairs are stored."""
    if not wanted:
        return set()
    kinds = {kind_id for kind_id, _ in wanted}
    rows = await session.execute(
        select(SkillVersion.kind_id, SkillVersion.number).where(
            SkillVersion.kind_id.in_(kinds),
            SkillVersion.number.in_({number for _, number in wanted}),
        )
    )
    return {(k, n) for k, n in rows} & set(wanted)


async def latest_numbers(session: AsyncSession, kind_ids: Collection[int]) -> dict[int, int]:
    """kind_id -> its newest (current) version number."""
    if not kind_ids:
        return {}
    rows = await session.execute(
        select(SkillVersion.kind_id, func.max(SkillVersion.number))
        .where(SkillVersion.kind_id.in_(set(kind_ids)))
        .group_by(SkillVersion.kind_id)
    )
    return {row[0]: row[1] for row in rows}


async def list_versions(session: AsyncSession, kind_id: int) -> list[VersionInfo]:
    """Newest first; reads no bytes and no CRDs."""
    rows = await session.execute(
        select(*_INFO_COLUMNS)
        .where(SkillVersion.kind_id == kind_id)
        .order_by(SkillVersion.number.desc())
    )
    return [VersionInfo(*row) for row in rows]


async def crd_of(session: AsyncSession, kind_id: int, number: int) -> dict[str, Any]:
    crd: dict[str, Any] | None = await session.scalar(
        select(SkillVersion.crd).where(
            SkillVersion.kind_id == kind_id, SkillVersion.number == number
        )
    )
    if crd is None:
        raise VersionNotFoundError(
            f"version {number} not found", code="version_not_found", details={"version": number}
        )
    return crd


async def package_of(session: AsyncSession, kind_id: int, number: int | None) -> tuple[bytes, str]:
    """(bytes, sha256) of version `number`, or of the newest version when None."""
    stmt = (
        select(SkillBlob.data, SkillBlob.sha256)
        .join(SkillVersion, SkillVersion.sha256 == SkillBlob.sha256)
        .where(SkillVersion.kind_id == kind_id)
    )
    if number is None:
        stmt = stmt.order_by(SkillVersion.number.desc()).limit(1)
    else:
        stmt = stmt.where(SkillVersion.number == number)
    row = (await session.execute(stmt)).first()
    if row is None:
        raise VersionNotFoundError(
            f"version {number} not found", code="version_not_found", details={"version": number}
        )
    return row[0], row[1]


async def blob(session: AsyncSession, sha256: str) -> bytes | None:
    return await session.scalar(select(SkillBlob.data).where(SkillBlob.sha256 == sha256))
