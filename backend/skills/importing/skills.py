"""Imports: every skill folder of a fetched tree becomes a skill; sync fetches one again.

Each folder is validated and written on its own (one transaction each): one refused skill
never stops the others, and the answer says per skill what happened.
"""

from __future__ import annotations

import asyncio
import posixpath
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.errors import Conflict, SkillhiveError
from backend.ghosts import check_user_namespace
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.errors import ErrorCode, PackageError
from backend.skills.importing.errors import refused
from backend.skills.importing.fetch import fetch_source
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import (
    FetchedTree,
    build_zip,
    folder_files,
    folder_problem,
    skill_folders,
)

Result = Literal["created", "updated", "unchanged", "refused"]


@dataclass(frozen=True)
class SkillResult:
    name: str
    path: str  # the skill's folder in the source
    result: Result
    code: str | None = None
    message: str | None = None
    version: int | None = None


@dataclass(frozen=True)
class ImportReport:
    source: dict[str, Any]  # {url, ref, commit, path} of the whole import
    items: list[SkillResult]


async def import_skills(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    url: str,
    *,
    ref: str | None = None,
    path: str | None = None,
    actor: int | None = None,
) -> ImportReport:
    check_user_namespace(scope, "skills")  # before anything is fetched
    tree = await fetch_source(url, ref, path, settings.egress, FetchLimits.from_settings(settings))
    folders = skill_folders(tree.files)
    if not folders:
        raise refused("no_skills_found", "no SKILL.md in the source", path=tree.path)
    items = [await _import_one(session, settings, scope, tree, f, actor) for f in folders]
    return ImportReport(_source(tree, tree.path), items)


async def sync_skill(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    name: str,
    *,
    actor: int | None = None,
) -> SkillResult:
    """Fetch the skill's recorded source again; a new version only when the bytes changed."""
    check_user_namespace(scope, "skills")
    crd = await service.get(session, scope, name)
    source = crd["status"].get("source")
    if not source:
        raise Conflict(
            f"skill {name!r} was not imported from a URL; nothing to sync",
            code="no_import_source",
            details={"name": name},
        )
    limits = FetchLimits.from_settings(settings)
    tree = await fetch_source(
        source["url"], source.get("ref"), source["path"], settings.egress, limits
    )
    if "" not in skill_folders(tree.files):
        raise refused("no_skills_found", "the source no longer holds the skill", path=tree.path)
    # Sync is one skill: its refusal is the answer's error, with its own status (422, 429).
    return await _write_one(session, settings, scope, tree, "", actor)


def _source(tree: FetchedTree, path: str) -> dict[str, Any]:
    return {"url": tree.url, "ref": tree.ref, "commit": tree.commit, "path": path}


def _place(tree: FetchedTree, folder: str) -> tuple[str, str]:
    """A skill folder's path in the source, and the folder's own name."""
    full_path = posixpath.join(tree.path, folder) if folder else tree.path
    return full_path, posixpath.basename(folder) or tree.root_name


async def _import_one(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    tree: FetchedTree,
    folder: str,
    actor: int | None,
) -> SkillResult:
    """One folder of an import: its refusal is reported in the answer, not raised."""
    try:
        return await _write_one(session, settings, scope, tree, folder, actor)
    except SkillhiveError as exc:
        await session.rollback()
        full_path, folder_name = _place(tree, folder)
        return SkillResult(folder_name, full_path, "refused", exc.code, exc.message)


async def _write_one(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    tree: FetchedTree,
    folder: str,
    actor: int | None,
) -> SkillResult:
    problem = folder_problem(tree, folder)
    if problem is not None:
        raise PackageError(ErrorCode(problem.code), problem.message, **problem.details)
    full_path, folder_name = _place(tree, folder)
    data = await asyncio.to_thread(build_zip, folder_files(tree, folder), folder_name)
    done = await service.upsert(
        session, settings, scope, data, source=_source(tree, full_path), actor=actor
    )
    name = done.crd["metadata"]["name"]
    return SkillResult(name, full_path, done.result, version=done.version)
