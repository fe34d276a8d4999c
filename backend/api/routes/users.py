"""Admin-only user management."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from backend.api.deps import AdminUser, RowId, SessionDep
from backend.api.errors import errors
from backend.api.routes.me import UserOut
from backend.auth import service
from backend.auth.notices import AuthEnded, auth_notices
from backend.errors import InvalidRequest

router = APIRouter(prefix="/users", tags=["users"], responses=errors(403))


class UserList(BaseModel):
    items: list[UserOut]


class UserCreate(BaseModel):
    name: str = Field(min_length=1, max_length=64)
    role: Literal["admin", "user"] = "user"


class UserCreated(UserOut):
    token: str = Field(description="A first API token for the new user; shown once.")


class UserPatch(BaseModel):
    is_active: bool | None = None
    role: Literal["admin", "user"] | None = None


@router.get("")
async def list_users(_: AdminUser, session: SessionDep) -> UserList:
    return UserList(items=[UserOut.model_validate(u) for u in await service.list_users(session)])


@router.post("", status_code=201, responses=errors(409, 422))
async def create_user(body: UserCreate, _: AdminUser, session: SessionDep) -> UserCreated:
    user = await service.create_user(session, body.name, admin=body.role == "admin")
    issued = await service.issue_token(session, user, "initial")
    await session.commit()
    return UserCreated(**UserOut.model_validate(user).model_dump(), token=issued.secret)


@router.patch("/{user_id}", responses=errors(404, 422))
async def patch_user(
    user_id: RowId, body: UserPatch, admin: AdminUser, session: SessionDep, request: Request
) -> UserOut:
    user = await service.get_user(session, user_id)
    if user.id == admin.id and (body.is_active is False or body.role == "user"):
        raise InvalidRequest(
            "admins cannot deactivate or demote themselves", code="cannot_modify_self"
        )
    if body.is_active is not None:
        user.is_active = body.is_active
    if body.role is not None:
        user.role = body.role
    await session.commit()
    if body.is_active is False:
        await auth_notices(request).ended(AuthEnded(user_id=user.id))
    return UserOut.model_validate(user)
