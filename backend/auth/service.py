"""User and token operations; the only code that reads or writes `users` and `api_tokens`."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Select, Table, bindparam, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from backend.auth.tokens import generate_token, hash_token
from backend.db.detached import as_loaded
from backend.db.hot_reads import HotRead
from backend.db.models import SYSTEM_USER_ID, ApiToken, Base, User, UserQuota
from backend.db.types import utcnow
from backend.errors import Conflict, InvalidRequest, NotFound, Unauthorized

USER_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
# Writing last_used_at on every request would turn each read into a write; once a minute is
# precise enough for "when was this token last used" and keeps hot paths read-only.
LAST_USED_RESOLUTION = timedelta(seconds=60)
REFUSALS_BATCH = 500  # token ids per query when open sockets are checked again
M = TypeVar("M", bound=Base)


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once, never stored


def _check_user_name(name: str) -> None:
    if not USER_NAME_RE.fullmatch(name):
        raise InvalidRequest(
            "user names are 1-64 characters of a-z, 0-9, '_', '.', '-', starting with a "
            "letter or digit",
            code="invalid_user_name",
            details={"name": name},
        )


async def create_user(session: AsyncSession, name: str, *, admin: bool = False) -> User:
    _check_user_name(name)
    user = User(name=name, role="admin" if admin else "user", is_active=True)
    session.add(user)
    try:
        await session.flush()
    except IntegrityError as exc:
        await session.rollback()
        raise Conflict(f"user {name!r} exists", code="user_exists", details={"name": name}) from exc
    return user


async def get_user_by_name(session: AsyncSession, name: str) -> User:
    user = await session.scalar(select(User).where(User.name == name, User.id != SYSTEM_USER_ID))
    if user is None:
        raise NotFound(f"no user {name!r}", code="user_not_found")
    return user


async def list_users(session: AsyncSession) -> list[User]:
    rows = await session.scalars(select(User).where(User.id != SYSTEM_USER_ID).order_by(User.id))
    return list(rows)


async def get_user(session: AsyncSession, user_id: int) -> User:
    user = await session.get(User, user_id) if user_id != SYSTEM_USER_ID else None
    if user is None:
        raise NotFound(f"no user {user_id}", code="user_not_found")
    return user


async def any_admin_exists(session: AsyncSession) -> bool:
    found = await session.scalar(
        select(User.id).where(User.role == "admin", User.id != SYSTEM_USER_ID).limit(1)
    )
    return found is not None


def _active_admins() -> Select[int]:
    return select(User.id).where(
        User.role == "admin", User.is_active.is_(True), User.id != SYSTEM_USER_ID
    )


async def lock_active_admins(session: AsyncSession) -> None:
    """Lock the active admins' rows until the transaction ends (PostgreSQL; SQLite has one
    write lock, which the transaction's first write takes)."""
    await session.execute(_active_admins().order_by(User.id).with_for_update())


async def any_active_admin(session: AsyncSession) -> bool:
    return await session.scalar(_active_admins().limit(1)) is not None


async def issue_token(
    session: AsyncSession,
    user: User,
    name: str,
    *,
    expires_at: datetime | None = None,
    secret: str | None = None,
) -> IssuedToken:
    """Create a token; `secret` is given only by the bootstrap path, otherwise random."""
    secret = secret or generate_token()
    token = ApiToken(
        user_id=user.id, name=name, token_hash=hash_token(secret), expires_at=expires_at
    )
    session.add(token)
    await session.flush()
    return IssuedToken(token=token, secret=secret)


async def list_tokens(session: AsyncSession, user_id: int) -> list[ApiToken]:
    rows = await session.scalars(
        select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id)
    )
    return list(rows)


async def revoke_token(session: AsyncSession, user_id: int, token_id: int) -> None:
    token = await session.scalar(
        select(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == user_id)
    )
    if token is None:  # someone else's token is indistinguishable from none
        raise NotFound(f"no token {token_id}", code="token_not_found")
    if token.revoked_at is None:
        token.revoked_at = utcnow()


def refusal(token: ApiToken, user: User, now: datetime) -> Unauthorized | None:
    """Why `token` no longer authorizes (the 401 REST answers), or None while it does."""
    if token.revoked_at is not None:
        return Unauthorized("token revoked", code="token_revoked")
    if token.expires_at is not None and token.expires_at <= now:
        return Unauthorized("token expired", code="token_expired")
    if not user.is_active or user.id == SYSTEM_USER_ID:
        return Unauthorized("user is deactivated", code="user_inactive")
    return None


# Built once: every request runs it, and building it cost more than the lookup (SQLAlchemy
# memoizes a built statement's cache key). Core columns, not entities: loading two ORM objects
# through a Session cost a request more CPU than the read itself.
_TOKENS: Table = ApiToken.__table__  # type: ignore[assignment]
_USERS: Table = User.__table__  # type: ignore[assignment]
# The user's quota overrides come with it (one outer join): a turn's send needs them, and
# reads nothing else before it is admitted once the conversation's owner is known.
_BY_HASH = HotRead(
    select(
        *(c.label(f"t_{c.key}") for c in _TOKENS.c),
        *(c.label(f"u_{c.key}") for c in _USERS.c),
        UserQuota.limits.label("quota_overrides"),
    )
    .join_from(_TOKENS, _USERS, _USERS.c.id == _TOKENS.c.user_id)
    .outerjoin(UserQuota, UserQuota.user_id == _USERS.c.id)
    .where(_TOKENS.c.token_hash == bindparam("token_hash"))
)


def _detached(model: type[M], row: Mapping[str, Any], prefix: str) -> M:
    """The row's columns under `prefix` as a detached instance, as if a Session had loaded it."""
    return as_loaded(model, {k[len(prefix) :]: v for k, v in row.items() if k.startswith(prefix)})


class Identity(NamedTuple):
    """Who a token authenticates (detached instances) and their quota overrides."""

    user: User
    token: ApiToken
    quota_overrides: dict[str, Any] | None  # `user_quotas.limits`; None without a row


async def identify(session: AsyncSession | AsyncConnection, secret: str) -> Identity:
    """The active user owning an unrevoked, unexpired token, and that token; or `Unauthorized`.
    One read, no write (`touch_due` tells whether `last_used_at` should be written)."""
    found = await _BY_HASH.rows(session, {"token_hash": hash_token(secret)})
    if not found:
        raise Unauthorized("unknown token", code="invalid_token")
    row = found[0]._asdict()
    token, user = _detached(ApiToken, row, "t_"), _detached(User, row, "u_")
    refused = refusal(token, user, utcnow())
    if refused is not None:
        raise refused
    return Identity(user, token, row["quota_overrides"])


def touch_due(token: ApiToken, now: datetime) -> bool:
    return token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION


async def touch(session: AsyncSession, token_id: int, now: datetime) -> None:
    """Record that the token was used at `now` (the caller commits)."""
    await session.execute(update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=now))


async def authenticate_token(session: AsyncSession, secret: str) -> tuple[User, ApiToken]:
    """`identify`, then `last_used_at` written on `session` when due."""
    user, token, _ = await identify(session, secret)
    now = utcnow()
    if touch_due(token, now):
        await touch(session, token.id, now)
        await session.commit()
    return user, token


async def refusals(session: AsyncSession, token_ids: Collection[int]) -> dict[int, Unauthorized]:
    """The tokens among `token_ids` that stopped authorizing, each with REST's 401."""
    now = utcnow()
    ids = sorted(set(token_ids))
    refused = {token_id: Unauthorized("unknown token", code="invalid_token") for token_id in ids}
    for start in range(0, len(ids), REFUSALS_BATCH):
        rows = await session.execute(
            select(ApiToken, User)
            .join(User, User.id == ApiToken.user_id)
            .where(ApiToken.id.in_(ids[start : start + REFUSALS_BATCH]))
        )
        for token, user in rows:
            verdict = refusal(token, user, now)
            if verdict is None:
                del refused[token.id]
            else:
                refused[token.id] = verdict
    return refused
