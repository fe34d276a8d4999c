"""Plugin CRDs (`/namespaces/{ns}/plugins`, `/public/plugins`) and a Ghost's slash commands.

A plugin is imported from a ZIP of a plugin folder or of a marketplace (the body as for a skill
upload, the same limits and archive rules) or from a URL (`/import`, as skills are); the answer
reports every plugin and skill. Importing a plugin again updates it in place (new versions for
changed skills, removal of the ones it dropped); `sync` does so from its recorded URL source.
Deleting a plugin deletes the skills it owns.
"""

# No `from __future__ import annotations`: FastAPI must see the Annotated aliases local to
# `_register` as objects, not as strings it cannot resolve.
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from backend.api.deps import CurrentUser, ImportSlotsDep, SessionDep, SettingsDep
from backend.api.resources import (
    IMPORT_IN_PROGRESS,
    QUOTA_SKILLS,
    ScopeDep,
    crd_errors,
    crd_response,
    own_scope,
    public_scopes,
)
from backend.api.routes.skill_import import FETCH_ERRORS, ImportIn
from backend.api.upload import ARCHIVE_BODY_OPENAPI, read_archive
from backend.crd.plugin import PLUGIN_KIND, Plugin
from backend.crd.stored import STALE_GHOST
from backend.ghosts import PUBLIC_GHOSTS, check_user_namespace
from backend.ghosts import service as ghosts
from backend.kinds import store
from backend.kinds.store import Scope
from backend.plugins import commands as ghost_commands
from backend.plugins import remote, service
from backend.skills.importing.fetch import fetch_source
from backend.skills.importing.limits import FetchLimits
from backend.skills.limits import ArchiveLimits
from backend.skills.service import PUBLIC_SCOPE


class PluginList(BaseModel):
    items: list[Plugin]
    continue_: str | None = Field(alias="continue")


class ImportAnswer(BaseModel):
    kind: str = Field(description="`plugin` or `marketplace`")
    name: str
    plugins: list[dict[str, Any]] = Field(
        description="per plugin: `status` created, updated, unchanged or refused (with `code`); "
        "its skills (each created, updated, unchanged or removed, with warnings, or refused with "
        "`code`), commands, MCP servers and secrets"
    )
    created: int
    updated: int = Field(description="plugins that existed and changed (a re-import)")
    unchanged: int = Field(description="plugins that existed with the same skills and spec")
    refused: int
    secrets: list[str] = Field(description="secrets the imported MCP servers use")
    missing_secrets: list[str] = Field(alias="missingSecrets", description="of those, unset")


class CommandOut(BaseModel):
    name: str = Field(description="what follows `/`")
    description: str
    argument_hint: str | None = Field(alias="argumentHint")
    source: str = Field(description="`plugin:<name>` or `skill`")


class CommandList(BaseModel):
    items: list[CommandOut]


def _register(router: APIRouter, read_scope: ScopeDep, write_scope: ScopeDep, *, own: bool) -> None:
    ReadScope = Annotated[Scope, Depends(read_scope)]
    WriteScope = Annotated[Scope, Depends(write_scope)]

    @router.get("", response_model=PluginList, responses=crd_errors(422, own=own))
    async def list_plugins(
        scope: ReadScope,
        session: SessionDep,
        limit: Annotated[int, Query(ge=1, le=store.MAX_PAGE)] = 100,
        continue_: Annotated[str | None, Query(alias="continue")] = None,
    ) -> Response:
        """Sorted by name, each with its skills and commands."""
        page = await store.list_page(session, PLUGIN_KIND, [scope], limit=limit, token=continue_)
        return Response(page.render(), media_type="application/json")

    @router.post(
        "",
        status_code=201,
        response_model=ImportAnswer,
        responses={
            200: {"model": ImportAnswer, "description": "no plugin created: updated or refused"},
            **crd_errors(
                (409, "the update drops a skill a Ghost names (`skill_referenced`)"),
                413,
                415,
                422,
                *((QUOTA_SKILLS,) if own else ()),
                IMPORT_IN_PROGRESS,
                own=own,
                write=True,
            ),
        },
        openapi_extra=ARCHIVE_BODY_OPENAPI,
    )
    async def import_plugins(
        request: Request,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        slots: ImportSlotsDep,
    ) -> JSONResponse:
        """A plugin folder or a marketplace (`.claude-plugin/marketplace.json`) as a ZIP.

        A plugin that exists is updated in place: 201 when a plugin was created, else 200."""
        data = (await read_archive(request, ArchiveLimits.from_settings(settings))).data
        fetcher = getattr(request.app.state, "plugin_fetcher", None)
        async with slots.hold(user.id, wait_s=settings.import_timeout_seconds):  # body read
            created, answer = await service.import_archive(
                session, settings, scope, data, actor=user.id, fetcher=fetcher
            )
        return JSONResponse(answer, status_code=201 if created else 200)

    @router.post(
        "/import",
        status_code=201,
        response_model=ImportAnswer,
        responses={
            200: {"model": ImportAnswer, "description": "no plugin created: updated or refused"},
            **crd_errors(
                (409, "the update drops a skill a Ghost names (`skill_referenced`)"),
                *FETCH_ERRORS,
                *((QUOTA_SKILLS,) if own else ()),
                IMPORT_IN_PROGRESS,
                own=own,
                write=True,
            ),
        },
    )
    async def import_plugins_from_url(
        body: ImportIn,
        request: Request,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        slots: ImportSlotsDep,
    ) -> JSONResponse:
        """A plugin folder or a marketplace from a git repository or an https archive (as a
        skill import from a URL: same egress policy and limits); each plugin records its
        source in `spec.source`."""
        check_user_namespace(scope, "plugins")  # before anything is fetched
        fetcher = getattr(request.app.state, "plugin_fetcher", None)
        limits = FetchLimits.from_settings(settings)
        async with slots.hold(user.id, wait_s=settings.import_timeout_seconds):
            fetched = await fetch_source(body.url, body.ref, body.path, settings.egress, limits)
            created, answer = await remote.import_fetched(
                session, settings, scope, fetched, actor=user.id, fetcher=fetcher
            )
        return JSONResponse(answer, status_code=201 if created else 200)

    @router.post(
        "/{name}/sync",
        response_model=ImportAnswer,
        responses=crd_errors(
            404,
            (
                409,
                "not imported from a URL (`no_import_source`), the source now holds another "
                "plugin or a marketplace (`source_changed`), or the update drops a skill a Ghost "
                "names (`skill_referenced`)",
            ),
            *FETCH_ERRORS,
            *((QUOTA_SKILLS,) if own else ()),
            IMPORT_IN_PROGRESS,
            own=own,
            write=True,
        ),
    )
    async def sync_plugin(
        name: str,
        request: Request,
        scope: WriteScope,
        user: CurrentUser,
        session: SessionDep,
        settings: SettingsDep,
        slots: ImportSlotsDep,
    ) -> JSONResponse:
        """Fetch the plugin's `spec.source` again (at its ref) and update it in place, as a
        re-import does: new versions only for skills whose bytes changed."""
        fetcher = getattr(request.app.state, "plugin_fetcher", None)
        async with slots.hold(user.id, wait_s=settings.import_timeout_seconds):
            answer = await remote.sync(
                session, settings, scope, name, actor=user.id, fetcher=fetcher
            )
        return JSONResponse(answer)

    @router.get("/{name}", response_model=Plugin, responses=crd_errors(404, own=own))
    async def get_plugin(name: str, scope: ReadScope, session: SessionDep) -> JSONResponse:
        return crd_response(await service.get(session, scope, name))

    @router.delete(
        "/{name}",
        status_code=204,
        responses=crd_errors(
            404, (409, "Ghosts use the plugin (`plugin_referenced`)"), own=own, write=True
        ),
    )
    async def delete_plugin(name: str, scope: WriteScope, session: SessionDep) -> Response:
        """Deletes the plugin and every skill it owns."""
        await service.delete(session, scope, name)
        return Response(status_code=204)


namespaced = APIRouter(prefix="/namespaces/{namespace}/plugins", tags=["plugins"])
_register(namespaced, own_scope, own_scope, own=True)

public = APIRouter(prefix="/public/plugins", tags=["public plugins"])
_register(public, *public_scopes(PUBLIC_SCOPE), own=False)


def _register_commands(router: APIRouter, read_scope: ScopeDep, *, own: bool) -> None:
    ReadScope = Annotated[Scope, Depends(read_scope)]

    @router.get(
        "/{name}/commands",
        response_model=CommandList,
        responses=crd_errors(404, STALE_GHOST, own=own),
    )
    async def list_commands(name: str, scope: ReadScope, session: SessionDep) -> CommandList:
        """What a client may offer after `/` in a chat with this Ghost (autocomplete)."""
        ghost = await ghosts.get_typed(session, scope, name)
        listed, _ = await ghost_commands.ghost_commands(session, scope, ghost.spec)
        return CommandList(items=[CommandOut.model_validate(c.listing()) for c in listed])


ghost_namespaced = APIRouter(prefix="/namespaces/{namespace}/ghosts", tags=["ghosts"])
_register_commands(ghost_namespaced, own_scope, own=True)

ghost_public = APIRouter(prefix="/public/ghosts", tags=["public ghosts"])
_register_commands(ghost_public, public_scopes(PUBLIC_GHOSTS)[0], own=False)
