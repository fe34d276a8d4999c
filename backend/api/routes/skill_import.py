"""Skill imports from a URL: `POST .../skills/import` and `POST .../skills/{name}/sync`.

Registered on both skill trees by `routes/skills.py` (own namespace and public).
"""

# No `from __future__ import annotations`: FastAPI must see the Annotated aliases as objects.
from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from backend.api.deps import CurrentUser, ImportSlotsDep, SessionDep, SettingsDep
from backend.api.resources import IMPORT_IN_PROGRESS, QUOTA_BYTES, ScopeDep, crd_errors
from backend.api.skill_names import SKILL
from backend.kinds.store import Scope
from backend.skills.importing import skills as importing
from backend.skills.importing.errors import FetchFailed, FetchTimeout

FETCH_ERRORS: list[int | tuple[int, str]] = [
    (413, "the download is over `SKILLHIVE_IMPORT_MAX_DOWNLOAD_BYTES` (`download_too_large`)"),
    (
        422,
        "the request or the source is refused: `invalid_import_url`, `egress_forbidden` (the "
        "URL or a redirect), `unknown_ref`, `path_not_found`, `not_an_archive`, "
        "`no_skills_found`, or an archive rule of uploads",
    ),
    (FetchFailed.status_code, "the source answered an error or was unreachable (`fetch_failed`)"),
    (FetchTimeout.status_code, "the fetch took longer than the limit (`fetch_timeout`)"),
]


class ImportIn(BaseModel):
    url: str = Field(max_length=2048, description="https archive (ZIP, tar.gz) or git repository")
    ref: str | None = Field(None, max_length=255, description="git branch, tag or commit")
    path: str | None = Field(None, max_length=1024, description="folder inside the source")


class ImportSource(BaseModel):
    url: str
    ref: str | None
    commit: str | None
    path: str


class ImportedSkill(BaseModel):
    name: str
    path: str
    result: Literal["created", "updated", "unchanged", "refused"]
    code: str | None = None
    message: str | None = None
    version: int | None = None


class ImportOut(BaseModel):
    source: ImportSource
    items: list[ImportedSkill]


def _item(result: importing.SkillResult) -> ImportedSkill:
    return ImportedSkill(
        name=result.name,
        path=result.path,
        result=result.result,
        code=result.code,
        message=result.message,
        version=result.version,
    )


def register(router: APIRouter, write_scope: ScopeDep, *, own: bool) -> None:
    WriteScope = Annotated[Scope, Depends(write_scope)]

    @router.post(
        "/import",
        response_model=ImportOut,
        responses=crd_errors(*FETCH_ERRORS, IMPORT_IN_PROGRESS, own=own, write=True),
    )
    async def import_skills(
        body: ImportIn,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        slots: ImportSlotsDep,
    ) -> ImportOut:
        """Import every skill folder of the source; per skill: created, updated, unchanged or
        refused (with the upload's error code)."""
        async with slots.hold(user.id, wait_s=settings.import_timeout_seconds):
            report = await importing.import_skills(
                session, settings, scope, body.url, ref=body.ref, path=body.path, actor=user.id
            )
        return ImportOut(
            source=ImportSource(**report.source), items=[_item(i) for i in report.items]
        )

    @router.post(
        f"/{SKILL}/sync",
        response_model=ImportedSkill,
        responses=crd_errors(
            404,
            (409, "the skill was not imported from a URL (`no_import_source`)"),
            *FETCH_ERRORS,
            *((QUOTA_BYTES,) if own else ()),
            IMPORT_IN_PROGRESS,
            own=own,
            write=True,
        ),
    )
    async def sync_skill(
        name: str,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        slots: ImportSlotsDep,
    ) -> ImportedSkill:
        """Fetch the skill's `status.source` again: a new version only when the bytes changed."""
        async with slots.hold(user.id, wait_s=settings.import_timeout_seconds):
            synced = await importing.sync_skill(session, settings, scope, name, actor=user.id)
        return _item(synced)
