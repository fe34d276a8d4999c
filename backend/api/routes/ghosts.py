"""Ghost CRDs: `/namespaces/{ns}/ghosts` (the caller's own) and `/public/ghosts` (user 0).

Same tenancy, resourceVersion and error rules as the skills API; the body is the Ghost CRD as
JSON (`apiVersion` and `kind` optional, checked when present).
"""

# No `from __future__ import annotations`: FastAPI must see the Annotated aliases local to
# `_register` as objects, not as strings it cannot resolve.
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import JSONResponse

from backend.api.body import read_json
from backend.api.deps import CurrentUser, SessionDep, SettingsDep
from backend.api.resources import (
    GhostList,
    ScopeDep,
    crd_errors,
    crd_response,
    own_scope,
    public_scopes,
)
from backend.crd.ghost import Ghost
from backend.ghosts import PUBLIC_GHOSTS, service
from backend.kinds import store
from backend.kinds.store import Scope
from backend.ops.quotas import check_stored

MAX_GHOST_BYTES = 1024 * 1024
QUOTA_GHOSTS = (429, "the caller's Ghosts quota is reached (`quota_ghosts`)")

# The body is read by hand (size cap, error codes); OpenAPI still shows its schema, which the
# responses register under components.

_BODY_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ghost"}}},
    }
}


def _register(router: APIRouter, read_scope: ScopeDep, write_scope: ScopeDep, *, own: bool) -> None:
    ReadScope = Annotated[Scope, Depends(read_scope)]
    WriteScope = Annotated[Scope, Depends(write_scope)]
    IfMatch = Annotated[str | None, Header()]

    @router.get("", response_model=GhostList, responses=crd_errors(422, own=own))
    async def list_ghosts(
        scope: ReadScope,
        session: SessionDep,
        limit: Annotated[int, Query(ge=1, le=store.MAX_PAGE)] = 100,
        continue_: Annotated[str | None, Query(alias="continue")] = None,
        include_public: bool = False,
    ) -> JSONResponse:
        """Sorted by name; pass the returned `continue` token to get the next page."""
        scopes = [scope, PUBLIC_GHOSTS] if own and include_public else [scope]
        return JSONResponse(await service.list_page(session, scopes, limit=limit, token=continue_))

    @router.post(
        "",
        status_code=201,
        response_model=Ghost,
        responses=crd_errors(
            409, 413, 415, 422, *((QUOTA_GHOSTS,) if own else ()), own=own, write=True
        ),
        openapi_extra=_BODY_OPENAPI,
    )
    async def create_ghost(
        request: Request,
        scope: WriteScope,
        session: SessionDep,
        settings: SettingsDep,
        user: CurrentUser,
    ) -> JSONResponse:
        """The answer's `status.warnings` names listed skills that are disabled."""
        body = await read_json(request, MAX_GHOST_BYTES)
        await check_stored(session, settings, scope.user_id, {"ghosts": 1})  # ops: quotas
        crd = await service.create(session, scope, body, caller_id=user.id, egress=settings.egress)
        return crd_response(crd, 201)

    @router.get("/{name}", response_model=Ghost, responses=crd_errors(404, own=own))
    async def get_ghost(name: str, scope: ReadScope, session: SessionDep) -> JSONResponse:
        """`status.warnings` names listed skills that are disabled (`skill_disabled`)."""
        return crd_response(await service.get(session, scope, name))

    @router.put(
        "/{name}",
        response_model=Ghost,
        responses=crd_errors(404, 412, 413, 415, 422, own=own, write=True),
        openapi_extra=_BODY_OPENAPI,
    )
    async def replace_ghost(
        name: str,
        request: Request,
        scope: WriteScope,
        session: SessionDep,
        settings: SettingsDep,
        user: CurrentUser,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        """Replaces labels and spec; `If-Match` or `metadata.resourceVersion` are preconditions."""
        expected = store.parse_if_match(if_match)
        body: Any = await read_json(request, MAX_GHOST_BYTES)
        crd = await service.replace(
            session, scope, name, body, caller_id=user.id, expected=expected, egress=settings.egress
        )
        return crd_response(crd)

    @router.delete("/{name}", status_code=204, responses=crd_errors(404, 412, own=own, write=True))
    async def delete_ghost(
        name: str, scope: WriteScope, session: SessionDep, if_match: IfMatch = None
    ) -> Response:
        expected = store.parse_if_match(if_match)
        await service.delete(session, scope, name, expected=expected)
        return Response(status_code=204)


namespaced = APIRouter(prefix="/namespaces/{namespace}/ghosts", tags=["ghosts"])
_register(namespaced, own_scope, own_scope, own=True)

public = APIRouter(prefix="/public/ghosts", tags=["public ghosts"])
_register(public, *public_scopes(PUBLIC_GHOSTS), own=False)
