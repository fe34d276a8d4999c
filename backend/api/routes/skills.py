"""Skill CRDs: `/namespaces/{ns}/skills` (the caller's own) and `/public/skills` (user 0).

Both trees share one set of handlers; they differ only in the scope a request resolves to and
in who may write (the owner; admins for public skills). A plugin's skill is addressed by its
full name, `.../skills/<plugin>/<skill>[/versions...]` (`backend.api.skill_names`); it changes
with its plugin, so PUT and DELETE of it are 409 `plugin_owned`.
"""

# No `from __future__ import annotations`: FastAPI must see the Annotated aliases local to
# `_register` as objects, not as strings it cannot resolve.
import mimetypes
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from backend.api.deps import CurrentUser, RowId, SessionDep, SettingsDep
from backend.api.resources import (
    QUOTA_BYTES,
    QUOTA_SKILLS,
    ScopeDep,
    SkillList,
    crd_errors,
    crd_response,
    own_scope,
    public_scopes,
)
from backend.api.routes import skill_import
from backend.api.skill_names import SKILL
from backend.api.upload import ARCHIVE_BODY_OPENAPI, read_archive
from backend.crd.common import Labels
from backend.crd.skill import Skill
from backend.kinds import store
from backend.kinds.cursor import MAX_ID
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.limits import ArchiveLimits
from backend.skills.service import PUBLIC_SCOPE

# File types a browser may render inline; anything else downloads (uploaded HTML/SVG must not
# run on the API's origin).
# Kubernetes spells it `dryRun`: every check runs, nothing is stored.
DryRun = Annotated[bool, Query(alias="dryRun")]

INLINE_TYPES = {"text/plain", "text/markdown", "application/json", "image/png", "image/jpeg"}


class SkillPatch(BaseModel):
    labels: Labels | None = Field(
        None, description="replaces the skill's labels; `skillhive.io/` keys are the service's"
    )
    enabled: bool | None = None


class SkillVersionOut(BaseModel):
    version: int
    sha256: str
    size: int
    created_at: datetime
    created_by: int | None
    source: dict[str, Any]


class SkillVersionList(BaseModel):
    items: list[SkillVersionOut]  # newest first


class RollbackIn(BaseModel):
    # strict: `true` or "1" is no version number (lax mode took both for 1)
    version: int = Field(ge=1, le=MAX_ID, strict=True)


def _zip_response(
    stored: service.StoredPackage, if_none_match: str | None, filename: str
) -> Response:
    headers = {"ETag": f'"{stored.sha256}"'}
    if _etag_matches(if_none_match, stored.sha256):
        return Response(status_code=304, headers=headers)
    headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return Response(stored.data, media_type="application/zip", headers=headers)


def _etag_matches(header: str | None, etag: str) -> bool:
    if header is None:
        return False
    candidates = {c.strip().removeprefix("W/") for c in header.split(",")}
    return "*" in candidates or f'"{etag}"' in candidates


def _register(router: APIRouter, read_scope: ScopeDep, write_scope: ScopeDep, *, own: bool) -> None:
    skill_import.register(router, write_scope, own=own)
    ReadScope = Annotated[Scope, Depends(read_scope)]
    WriteScope = Annotated[Scope, Depends(write_scope)]

    @router.get("", response_model=SkillList, responses=crd_errors(422, own=own))
    async def list_skills(
        scope: ReadScope,
        session: SessionDep,
        limit: Annotated[int, Query(ge=1, le=store.MAX_PAGE)] = 100,
        continue_: Annotated[str | None, Query(alias="continue")] = None,
        q: Annotated[str | None, Query(max_length=200)] = None,
        tag: Annotated[str | None, Query(max_length=100)] = None,
        include_public: bool = False,
    ) -> Response:
        """Sorted by name; pass the returned `continue` token to get the next page."""
        scopes = [scope, PUBLIC_SCOPE] if own and include_public else [scope]
        page = await store.list_page(
            session, service.SKILL_KIND, scopes, limit=limit, token=continue_, query=q, tag=tag
        )
        return Response(page.render(), media_type="application/json")

    @router.post(
        "",
        status_code=201,
        response_model=Skill,
        responses=crd_errors(
            (409, "a skill of that name exists (`skill_exists`); PUT replaces it"),
            413,
            415,
            422,
            *((QUOTA_SKILLS,) if own else ()),
            own=own,
            write=True,
        ),
        openapi_extra=ARCHIVE_BODY_OPENAPI,
    )
    async def upload_skill(
        request: Request,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        strict: bool = False,
        dry_run: DryRun = False,
    ) -> JSONResponse:
        """`dryRun=true` runs every check and answers as an upload would, storing nothing."""
        archive = await read_archive(request, ArchiveLimits.from_settings(settings))
        crd = await service.create(
            session,
            settings,
            scope,
            archive.data,
            strict=strict,
            actor=user.id,
            dry_run=dry_run,
            sha256=archive.sha256,
        )
        return crd_response(crd, 201)

    @router.get(f"/{SKILL}", response_model=Skill, responses=crd_errors(404, own=own))
    async def get_skill(name: str, scope: ReadScope, session: SessionDep) -> JSONResponse:
        return crd_response(await service.get(session, scope, name))

    @router.put(
        f"/{SKILL}",
        response_model=Skill,
        responses=crd_errors(
            404,
            (409, "a plugin's skill changes with its plugin (`plugin_owned`)"),
            412,
            413,
            415,
            422,
            *((QUOTA_BYTES,) if own else ()),
            own=own,
            write=True,
        ),
        openapi_extra=ARCHIVE_BODY_OPENAPI,
    )
    async def replace_skill(
        name: str,
        request: Request,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        strict: bool = False,
        dry_run: DryRun = False,
        if_match: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        """`dryRun=true` runs every check and answers as a replace would, storing nothing."""
        expected = store.parse_if_match(if_match)
        archive = await read_archive(request, ArchiveLimits.from_settings(settings))
        crd = await service.replace(
            session,
            settings,
            scope,
            name,
            archive.data,
            sha256=archive.sha256,
            strict=strict,
            expected_version=expected,
            actor=user.id,
            dry_run=dry_run,
        )
        return crd_response(crd)

    @router.patch(
        f"/{SKILL}", response_model=Skill, responses=crd_errors(404, 412, 422, own=own, write=True)
    )
    async def patch_skill(
        name: str,
        body: SkillPatch,
        scope: WriteScope,
        session: SessionDep,
        if_match: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        crd = await service.patch(
            session,
            scope,
            name,
            labels=body.labels,
            enabled=body.enabled,
            expected_version=store.parse_if_match(if_match),
        )
        return crd_response(crd)

    @router.delete(
        f"/{SKILL}",
        status_code=204,
        responses=crd_errors(
            404,
            (
                409,
                "Ghosts use the skill (`skill_referenced`), or a plugin owns it (`plugin_owned`)",
            ),
            422,
            own=own,
            write=True,
        ),
    )
    async def delete_skill(
        name: str, scope: WriteScope, session: SessionDep, force: bool = False
    ) -> Response:
        """409 `skill_referenced` while Ghosts use it; `force=true` removes it from them."""
        await service.delete(session, scope, name, force=force)
        return Response(status_code=204)

    @router.get(
        f"/{SKILL}/package",
        response_class=Response,
        responses={
            200: {
                "description": "the ZIP archive; `ETag` is its SHA-256",
                "content": {"application/zip": {}},  # binary: no schema (OpenAPI 3.1)
            },
            304: {"description": "not modified (`If-None-Match` matched)"},
            **crd_errors(404, own=own),
        },
    )
    async def get_package(
        name: str,
        scope: ReadScope,
        session: SessionDep,
        if_none_match: Annotated[str | None, Header()] = None,
    ) -> Response:
        stored = await service.package(session, scope, name)
        return _zip_response(stored, if_none_match, f"{name}.zip")

    @router.get(f"/{SKILL}/versions", responses=crd_errors(404, own=own))
    async def list_versions(name: str, scope: ReadScope, session: SessionDep) -> SkillVersionList:
        """The skill's retained package versions, newest first (no bytes)."""
        rows = await service.version_list(session, scope, name)
        return SkillVersionList(
            items=[
                SkillVersionOut(
                    version=v.version,
                    sha256=v.sha256,
                    size=v.size,
                    created_at=v.created_at,
                    created_by=v.created_by,
                    source=v.source,
                )
                for v in rows
            ]
        )

    @router.get(
        f"/{SKILL}/versions/{{version}}",
        response_model=Skill,
        responses=crd_errors(404, 422, own=own),
    )
    async def get_version(
        name: str, version: RowId, scope: ReadScope, session: SessionDep
    ) -> JSONResponse:
        """The CRD as it was at that version; 404 `version_not_found` once pruned."""
        return JSONResponse(await service.version_crd(session, scope, name, version))

    @router.get(
        f"/{SKILL}/versions/{{version}}/package",
        response_class=Response,
        responses={
            200: {
                "description": "the ZIP archive of that version; `ETag` is its SHA-256",
                "content": {"application/zip": {}},
            },
            304: {"description": "not modified (`If-None-Match` matched)"},
            **crd_errors(404, 422, own=own),
        },
    )
    async def get_version_package(
        name: str,
        version: RowId,
        scope: ReadScope,
        session: SessionDep,
        if_none_match: Annotated[str | None, Header()] = None,
    ) -> Response:
        stored = await service.version_package(session, scope, name, version)
        return _zip_response(stored, if_none_match, f"{name}-v{version}.zip")

    @router.post(
        f"/{SKILL}/rollback",
        response_model=Skill,
        responses=crd_errors(404, 412, 422, *((QUOTA_BYTES,) if own else ()), own=own, write=True),
    )
    async def rollback_skill(
        name: str,
        body: RollbackIn,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        if_match: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        """A new version whose package and spec are `version`'s; labels and `enabled` stay."""
        crd = await service.rollback(
            session,
            settings,
            scope,
            name,
            body.version,
            actor=user.id,
            expected_version=store.parse_if_match(if_match),
        )
        return crd_response(crd)

    @router.get(
        f"/{SKILL}/files/{{path:path}}",
        response_class=Response,
        responses={
            200: {
                "description": "the file: text, JSON, PNG and JPEG inline, anything else as a "
                "download (`application/octet-stream`)",
                "content": {"*/*": {}},
            },
            **crd_errors(404, own=own),
        },
    )
    async def get_file(
        name: str, path: str, scope: ReadScope, session: SessionDep, settings: SettingsDep
    ) -> Response:
        content = await service.package_file(session, settings, scope, name, path)
        guessed = mimetypes.guess_type(path)[0] or "application/octet-stream"
        if path.endswith(".md"):
            guessed = "text/markdown"
        inline = guessed in INLINE_TYPES
        headers = {
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "sandbox",
            "Content-Disposition": "inline" if inline else "attachment",
        }
        media = guessed if inline else "application/octet-stream"
        if media.startswith("text/"):
            media += "; charset=utf-8"
        return Response(content, media_type=media, headers=headers)


namespaced = APIRouter(prefix="/namespaces/{namespace}/skills", tags=["skills"])
_register(namespaced, own_scope, own_scope, own=True)

public = APIRouter(prefix="/public/skills", tags=["public skills"])
_register(public, *public_scopes(PUBLIC_SCOPE), own=False)
