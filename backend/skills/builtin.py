"""Built-in public skills: the folders under `skills/`, upserted when their content changed."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.config import Settings
from backend.errors import Conflict, SkillhiveError
from backend.kinds import store
from backend.skills import service
from backend.skills.folder import zip_folder
from backend.skills.package import SKILL_MD_NAMES
from backend.skills.service import PUBLIC_SCOPE

log = logging.getLogger("skillhive.skills")
BUILTIN = {"type": "builtin"}


@dataclass(frozen=True)
class SyncResult:
    name: str
    action: str  # created | updated | unchanged | failed


def builtin_dir(settings: Settings) -> Path | None:
    if settings.builtin_skills_dir is not None:
        return settings.builtin_skills_dir
    # A source checkout keeps them beside the packages; the container image in /app/skills.
    for candidate in (Path(__file__).resolve().parents[2] / "skills", Path.cwd() / "skills"):
        if candidate.is_dir():
            return candidate
    return None


def skill_folders(root: Path) -> list[Path]:
    return sorted(
        p for p in root.iterdir() if p.is_dir() and any((p / n).is_file() for n in SKILL_MD_NAMES)
    )


async def _sync_one(session: AsyncSession, settings: Settings, folder: Path) -> SyncResult:
    data = zip_folder(folder)
    package = service.read_builtin(data, settings)
    try:
        current = await service.get(session, PUBLIC_SCOPE, package.name)
    except store.NotFoundError:
        try:
            await service.create(session, settings, PUBLIC_SCOPE, data, source=BUILTIN)
        except Conflict:  # another gateway starting at the same moment won the race
            return SyncResult(package.name, "unchanged")
        return SyncResult(package.name, "created")
    if current["status"]["sha256"] == package.sha256:
        return SyncResult(package.name, "unchanged")
    await service.replace(session, settings, PUBLIC_SCOPE, package.name, data, source=BUILTIN)
    return SyncResult(package.name, "updated")


async def sync_builtin_skills(
    sessionmaker: async_sessionmaker[AsyncSession], settings: Settings
) -> list[SyncResult]:
    root = builtin_dir(settings)
    if root is None:
        log.warning("no built-in skills folder found; set SKILLHIVE_BUILTIN_SKILLS_DIR")
        return []
    results = []
    for folder in skill_folders(root):
        async with sessionmaker() as session:
            try:
                result = await _sync_one(session, settings, folder)
            except SkillhiveError as exc:  # one broken skill must not keep the gateway down
                log.error(
                    "built-in skill %s not synced: %s (%s)", folder.name, exc.message, exc.code
                )
                results.append(SyncResult(folder.name, "failed"))
                continue
        if result.action != "unchanged":
            log.info("built-in skill %s %s", result.name, result.action)
        results.append(result)
    return results
