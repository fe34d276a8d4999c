"""Admin-only user management."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from backend.api.deps import AdminUser, RowId, SessionDep
from backend.api.errors import errors
from backend.api.routes.me import UserOut
from backend.auth import service
from backend.auth.notices import AuthEnded, auth_notices
from backend.errors import InvalidRequest
from backend.ops import quotas
from backend.ops.quotas import Limit

router = APIRouter(prefix="/users", tags=["users"], responses=errors(403))


class UserList(BaseModel):
    items: list[UserOut]


class UserCreate(BaseModel):
    name: str = Field(min_length=1, max_length=64)
    role: Literal["admin", "user"] = "user"


class UserCreated(UserOut):
    token: str = Field(description="A first API token for the new user; shown once.")


QuotaValue = Annotated[int, Field(ge=0)] | Literal["default"] | None


class UserPatch(BaseModel):
    is_active: bool | None = None
    role: Literal["admin", "user"] | None = None
    quotas: dict[Limit, QuotaValue] | None = Field(
        None,
        description="per-user overrides of the `quota_*` settings: a number, null (no limit) "
        'or "default" (the setting again); limits not named keep their override',
    )


class UserQuotas(UserOut):
    quotas: dict[Limit, int | None] = Field(description="the user's limits now (null: none)")


@router.get("")
async def list_users(_: AdminUser, session: SessionDep) -> UserList:
    return UserList(items=[UserOut.model_validate(u) for u in await service.list_users(session)])


@router.post("", status_code=201, responses=errors(409, 422))
async def create_user(body: UserCreate, _: AdminUser, session: SessionDep) -> UserCreated:
    user = await service.create_user(session, body.name, admin=body.role == "admin")
    issued = await service.issue_token(session, user, "initial")
    await session.commit()
    return UserCreated(**UserOut.model_validate(user).model_dump(), token=issued.secret)


@router.patch(
    "/{user_id}",
    responses=errors(404, (422, "invalid fields, or no active admin would be left (`last_admin`)")),
)
async def patch_user(
    user_id: RowId, body: UserPatch, admin: AdminUser, session: SessionDep, request: Request
) -> UserQuotas:
    user = await service.get_user(session, user_id)
    removes_admin = (body.is_active is False or body.role == "user") and user.is_active
    if user.id == admin.id and removes_admin:
        raise InvalidRequest(
            "admins cannot deactivate or demote themselves", code="cannot_modify_self"
        )
    if removes_admin and user.role == "admin":
        # Two admins removing each other at once must not both succeed: the active admins'
        # rows are locked (PostgreSQL), the change is written (SQLite takes its one write lock
        # here), then at least one active admin must be left.
        await service.lock_active_admins(session)
    if body.is_active is not None:
        user.is_active = body.is_active
    if body.role is not None:
        user.role = body.role
    await session.flush()
    if removes_admin and not await service.any_active_admin(session):
        await session.rollback()
        raise InvalidRequest("no active admin would be left", code="last_admin")
    if body.quotas:  # ops: per-user quota overrides
        await quotas.set_overrides(session, user.id, body.quotas)
    await session.commit()
    if body.is_active is False:
        await auth_notices(request).ended(AuthEnded(user_id=user.id))
    limits = await quotas.limits_for(session, request.app.state.settings, user.id)
    return UserQuotas(**UserOut.model_validate(user).model_dump(), quotas=limits)
