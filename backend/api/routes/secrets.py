"""The caller's secrets: names only ever come back, never values."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from backend.api.deps import CurrentUser, SessionDep
from backend.api.errors import errors
from backend.secrets import service

router = APIRouter(prefix="/secrets", tags=["secrets"])

MAX_SECRET_BYTES = 64 * 1024


class SecretIn(BaseModel):
    value: str = Field(min_length=1, max_length=MAX_SECRET_BYTES)


class SecretOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    created_at: datetime
    updated_at: datetime


class SecretList(BaseModel):
    items: list[SecretOut]


@router.get("")
async def list_secrets(user: CurrentUser, session: SessionDep) -> SecretList:
    rows = await service.list_names(session, user.id)
    return SecretList(items=[SecretOut.model_validate(r) for r in rows])


@router.put(
    "/{name}",
    status_code=201,
    response_class=Response,
    responses={
        201: {"description": "created"},
        204: {"description": "replaced"},
        **errors(422),
    },
)
async def put_secret(
    name: str, body: SecretIn, user: CurrentUser, session: SessionDep, request: Request
) -> Response:
    created = await service.put(session, request.app.state.cipher, user.id, name, body.value)
    await session.commit()
    return Response(status_code=201 if created else 204)


@router.delete("/{name}", status_code=204, responses=errors(404))
async def delete_secret(name: str, user: CurrentUser, session: SessionDep) -> Response:
    await service.remove(session, user.id, name)
    await session.commit()
    return Response(status_code=204)
