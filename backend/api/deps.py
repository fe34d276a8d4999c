"""Annotated dependencies; `CurrentUser` / `AdminUser` (and `CurrentToken`, the token they were
read with, or `CurrentIdentity`, all the token's read) are the only way routes learn who calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from backend.auth.requests import RequestAuth
from backend.auth.service import Identity
from backend.chat.runtime import ChatRuntime
from backend.chat.transport import TurnTransport
from backend.config import Settings
from backend.db.models import ApiToken, User
from backend.errors import Forbidden, Unauthorized
from backend.kinds.cursor import MAX_ID
from backend.skills.importing.slots import ImportSlots
from backend.ws.live_auth import LiveAuth

# Declared for OpenAPI's "Authorize" button; the header is parsed below for precise errors.
_bearer_scheme = HTTPBearer(auto_error=False, description="API token: `Bearer shk_...`")


# The dependencies below are `async def` though they do not await: FastAPI runs a plain `def`
# dependency on its thread pool, a thread round trip per request for an attribute read.


async def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with request.app.state.sessionmaker() as session:
        yield session


async def get_chat(request: Request) -> ChatRuntime:
    runtime: ChatRuntime = request.app.state.chat
    return runtime


async def get_import_slots(request: Request) -> ImportSlots:
    slots: ImportSlots = request.app.state.import_slots
    return slots


async def get_transport(chat: Annotated[ChatRuntime, Depends(get_chat)]) -> TurnTransport:
    return chat.transport


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
ChatDep = Annotated[ChatRuntime, Depends(get_chat)]
TransportDep = Annotated[TurnTransport, Depends(get_transport)]
SessionDep = Annotated[AsyncSession, Depends(get_session)]
ImportSlotsDep = Annotated[ImportSlots, Depends(get_import_slots)]
# A numeric id in a path: out of the id columns' range is a 422, not a driver error (500).
RowId = Annotated[int, Path(ge=0, le=MAX_ID)]
# A text id in a path (a conversation's, an artifact's): PostgreSQL text holds no NUL, so one
# is a 422 too, on either database.
TextId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[^\x00]+$")]


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header value, or `Unauthorized`."""
    if not authorization:
        raise Unauthorized("missing Authorization header", code="missing_token")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise Unauthorized("expected 'Authorization: Bearer <token>'", code="malformed_token")
    return token


async def get_identity(
    request: Request, _scheme: Annotated[object, Depends(_bearer_scheme)]
) -> Identity:
    """Who calls (`Identity`: user, token, quota overrides), read on the auth pool's connection
    that is back before the route runs: no connection stays checked out while a turn runs, a
    body streams or an SSE stream is open. User and token come back detached (their columns
    loaded); routes write through their own session."""
    found: Identity | None = getattr(request.state, "identity", None)  # the body guard's check
    if found is None:
        token = bearer_token(request.headers.get("authorization"))
        auth: RequestAuth = request.app.state.auth
        found = request.state.identity = await auth.identify(token)
    request.state.user_id = found.user.id  # read by the access log
    return found


CurrentIdentity = Annotated[Identity, Depends(get_identity)]


async def get_current_user(identity: CurrentIdentity) -> User:
    """The caller."""
    return identity.user


async def get_admin_user(user: Annotated[User, Depends(get_current_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("admin only", code="admin_required")
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]
AdminUser = Annotated[User, Depends(get_admin_user)]


async def get_current_token(identity: CurrentIdentity) -> ApiToken:
    """The token the caller authenticated with (detached)."""
    return identity.token


async def get_live_auth(request: Request) -> LiveAuth:
    live_auth: LiveAuth = request.app.state.sio.live_auth
    return live_auth


CurrentToken = Annotated[ApiToken, Depends(get_current_token)]
LiveAuthDep = Annotated[LiveAuth, Depends(get_live_auth)]
