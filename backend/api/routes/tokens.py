"""The caller's own API tokens."""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from backend.api.deps import CurrentUser, RowId, SessionDep
from backend.api.errors import errors
from backend.auth import service
from backend.auth.notices import AuthEnded, auth_notices
from backend.db.types import utcnow

router = APIRouter(prefix="/tokens", tags=["tokens"])


class TokenOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None


class TokenList(BaseModel):
    items: list[TokenOut]


class TokenCreate(BaseModel):
    name: str = Field(min_length=1, max_length=128)
    expires_in_days: int | None = Field(None, ge=1, le=3650)


class TokenCreated(TokenOut):
    token: str = Field(description="The secret; shown once, store it now.")


@router.get("")
async def list_tokens(user: CurrentUser, session: SessionDep) -> TokenList:
    tokens = await service.list_tokens(session, user.id)
    return TokenList(items=[TokenOut.model_validate(t) for t in tokens])


@router.post("", status_code=201, responses=errors(422))
async def create_token(body: TokenCreate, user: CurrentUser, session: SessionDep) -> TokenCreated:
    expires = utcnow() + timedelta(days=body.expires_in_days) if body.expires_in_days else None
    issued = await service.issue_token(session, user, body.name, expires_at=expires)
    await session.commit()
    return TokenCreated(**TokenOut.model_validate(issued.token).model_dump(), token=issued.secret)


@router.delete("/{token_id}", status_code=204, responses=errors(404, 422))
async def revoke_token(
    token_id: RowId, user: CurrentUser, session: SessionDep, request: Request
) -> Response:
    await service.revoke_token(session, user.id, token_id)
    await session.commit()
    await auth_notices(request).ended(AuthEnded(token_id=token_id))
    return Response(status_code=204)
