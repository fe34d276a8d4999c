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
from backend.api.deps import SessionDep, SettingsDep
from backend.api.resources import ScopeDep, crd_response, own_scope, public_scopes
from backend.crd.ghost import GHOST_KIND, Ghost
from backend.ghosts import PUBLIC_GHOSTS, service
from backend.kinds import store
from backend.kinds.store import Scope

MAX_GHOST_BYTES = 1024 * 1024

# The body is read by hand (size cap, error codes); OpenAPI still shows its schema, which the
# GET response registers under components.

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

    @router.get("")
    async def list_ghosts(
        scope: ReadScope,
        session: SessionDep,
        limit: Annotated[int, Query(ge=1, le=store.MAX_PAGE)] = 100,
        continue_: Annotated[str | None, Query(alias="continue")] = None,
        include_public: bool = False,
    ) -> Response:
        """Sorted by name; pass the returned `continue` token to get the next page."""
        scopes = [scope, PUBLIC_GHOSTS] if own and include_public else [scope]
        page = await store.list_page(session, GHOST_KIND, scopes, limit=limit, token=continue_)
        return Response(page.render(), media_type="application/json")

    @router.post("", status_code=201, openapi_extra=_BODY_OPENAPI)
    async def create_ghost(
        request: Request, scope: WriteScope, session: SessionDep, settings: SettingsDep
    ) -> JSONResponse:
        body = await read_json(request, MAX_GHOST_BYTES)
        crd = await service.create(session, scope, body, egress=settings.egress)
        return crd_response(crd, 201)

    @router.get("/{name}", responses={200: {"model": Ghost}})
    async def get_ghost(name: str, scope: ReadScope, session: SessionDep) -> JSONResponse:
        return crd_response(await service.get(session, scope, name))

    @router.put("/{name}", openapi_extra=_BODY_OPENAPI)
    async def replace_ghost(
        name: str,
        request: Request,
        scope: WriteScope,
        session: SessionDep,
        settings: SettingsDep,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        """Replaces labels and spec; `If-Match` or `metadata.resourceVersion` are preconditions."""
        expected = store.parse_if_match(if_match)
        body: Any = await read_json(request, MAX_GHOST_BYTES)
        crd = await service.replace(
            session, scope, name, body, expected=expected, egress=settings.egress
        )
        return crd_response(crd)

    @router.delete("/{name}", status_code=204)
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
