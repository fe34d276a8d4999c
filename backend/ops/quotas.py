"""Per-user quotas: the `quota_*` settings, overridden per user by admins (`user_quotas`).

Rates (turns per minute, tokens per UTC day) are fixed-window counters shared through Redis
when configured (every gateway and worker counts in the same keys), in this process otherwise.
Stored amounts (skills, Ghosts, conversations, skill bytes) are counted in the database, which
every process shares. A limit reached is a 429 whose code names it, with `Retry-After`.
`concurrent_turns` defaults to `SKILLHIVE_MAX_CONCURRENT_TURNS_PER_USER`; the pipeline's
admission control (backend/chat/admission.py) enforces it with the user's override.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

import redis.asyncio as aioredis
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.db.models import (
    SYSTEM_USER_ID,
    Conversation,
    Kind,
    SkillVersion,
    User,
    UserQuota,
)
from backend.errors import SkillhiveError
from backend.ops.metrics import QUOTA_REJECTIONS

Limit = Literal[
    "tokens_per_day",
    "turns_per_minute",
    "concurrent_turns",
    "skill_bytes",
    "skills",
    "ghosts",
    "conversations",
]
LIMITS: tuple[Limit, ...] = get_args(Limit)
DAY_S = 86_400
MINUTE_S = 60


class QuotaExceeded(SkillhiveError):
    status_code = 429

    def __init__(self, limit: Limit, maximum: int, retry_after_s: int) -> None:
        super().__init__(
            f"quota reached: {limit.replace('_', ' ')} is limited to {maximum}",
            code=f"quota_{limit}",
            details={"limit": limit, "max": maximum, "retry_after_seconds": retry_after_s},
        )
        self.headers = {"Retry-After": str(retry_after_s)}
        QUOTA_REJECTIONS.labels(limit).inc()


def default_limits(settings: Settings) -> dict[Limit, int | None]:
    # Concurrent turns are the pipeline's admission limit: one setting, overridable per user.
    return {
        name: settings.max_concurrent_turns_per_user
        if name == "concurrent_turns"
        else getattr(settings, f"quota_{name}")
        for name in LIMITS
    }


async def overrides(session: AsyncSession, user_id: int) -> dict[str, int | None]:
    row = await session.get(UserQuota, user_id)
    return dict(row.limits) if row is not None else {}


def with_overrides(
    settings: Settings, own: Mapping[str, int | None] | None
) -> dict[Limit, int | None]:
    """The settings' limits with a user's stored overrides (null: no limit) on top; `own` is
    `user_quotas.limits`, None when the user has no row."""
    limits = default_limits(settings)
    for name in LIMITS:
        if own is not None and name in own:
            limits[name] = own[name]
    return limits


async def limits_for(
    session: AsyncSession, settings: Settings, user_id: int
) -> dict[Limit, int | None]:
    """The user's limits: the settings, with the admin's overrides (null: no limit) on top."""
    return with_overrides(settings, await overrides(session, user_id))


async def set_overrides(
    session: AsyncSession, user_id: int, changes: Mapping[Limit, int | str | None]
) -> None:
    """Merge `changes` into the user's overrides; a value of "default" drops one (flushes)."""
    row = await session.get(UserQuota, user_id)
    merged = dict(row.limits) if row is not None else {}
    for name, value in changes.items():
        if value == "default":
            merged.pop(name, None)
        else:
            merged[name] = value
    if row is None:
        session.add(UserQuota(user_id=user_id, limits=merged))
    else:
        row.limits = merged
    await session.flush()


# --- rate counters ---------------------------------------------------------------------------


class Counters(Protocol):
    async def add(self, key: str, amount: int, window_s: int) -> int:
        """Add to the counter of the current window; its new value."""
        ...

    async def value(self, key: str, window_s: int) -> int: ...


def _window(window_s: int, now: float) -> tuple[int, int]:
    """(index of the current window, seconds until it ends)."""
    index = int(now // window_s)
    return index, max(1, int((index + 1) * window_s - now + 0.999))


class MemoryCounters:
    """One process's counters (embedded mode)."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, int], int] = {}

    async def add(self, key: str, amount: int, window_s: int) -> int:
        index, _ = _window(window_s, time.time())
        slot = (key, index)
        self._values = {k: v for k, v in self._values.items() if k[1] >= index - 1 or k == slot}
        self._values[slot] = self._values.get(slot, 0) + amount
        return self._values[slot]

    async def value(self, key: str, window_s: int) -> int:
        index, _ = _window(window_s, time.time())
        return self._values.get((key, index), 0)


class RedisCounters:
    """Counters every gateway and worker shares: one key per user, limit and window."""

    def __init__(self, redis: aioredis.Redis, prefix: str) -> None:
        self.redis = redis
        self.prefix = prefix

    def _key(self, key: str, window_s: int) -> str:
        index, _ = _window(window_s, time.time())
        return f"{self.prefix}quota:{key}:{index}"

    async def add(self, key: str, amount: int, window_s: int) -> int:
        name = self._key(key, window_s)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incrby(name, amount)
            pipe.expire(name, window_s * 2)
            value, _ = await pipe.execute()
        return int(value)

    async def value(self, key: str, window_s: int) -> int:
        return int(await self.redis.get(self._key(key, window_s)) or 0)


def counters_for(redis: aioredis.Redis | None, prefix: str) -> Counters:
    """Shared counters under `prefix` (SKILLHIVE_REDIS_PREFIX) with Redis, else in-process."""
    return RedisCounters(redis, prefix) if redis is not None else MemoryCounters()


# --- enforcement -----------------------------------------------------------------------------


@dataclass
class Quotas:
    """The rate quotas of one process (call sites: ChatRuntime.send, TurnRunner)."""

    settings: Settings
    counters: Counters

    async def admit_turn(
        self, user_id: int, own: Mapping[str, int | None] | None
    ) -> dict[Limit, int | None]:
        """Refuse a turn over the user's rates; the user's limits otherwise. `own`: the
        user's stored overrides (`user_quotas.limits`, None without a row), which the caller
        reads with the conversation it checks."""
        limits = with_overrides(self.settings, own)
        tokens = limits["tokens_per_day"]
        if tokens is not None:
            used = await self.counters.value(f"{user_id}:tokens", DAY_S)
            if used >= tokens:
                raise QuotaExceeded("tokens_per_day", tokens, _window(DAY_S, time.time())[1])
        turns = limits["turns_per_minute"]
        if turns is not None:
            started = await self.counters.add(f"{user_id}:turns", 1, MINUTE_S)
            if started > turns:
                raise QuotaExceeded("turns_per_minute", turns, _window(MINUTE_S, time.time())[1])
        return limits

    async def refund_turn(self, user_id: int, limits: Mapping[Limit, int | None]) -> None:
        """Give back the turn `admit_turn` counted, for a send refused after it (409, 429
        `too_many_turns`): only turns that start count. At a minute's boundary the refund
        lands in the new window: at most one extra turn there."""
        if limits["turns_per_minute"] is not None:
            await self.counters.add(f"{user_id}:turns", -1, MINUTE_S)

    async def charge_tokens(self, user_id: int, tokens: int, limit: int | None) -> bool:
        """Count a model call's tokens; True when the user is now over `limit`."""
        used = await self.counters.add(f"{user_id}:tokens", tokens, DAY_S)
        return limit is not None and used > limit


async def _stored(session: AsyncSession, user_id: int, limit: Limit) -> int:
    if limit == "conversations":
        query = select(func.count()).where(Conversation.user_id == user_id)
    elif limit == "skill_bytes":
        query = (
            select(func.coalesce(func.sum(SkillVersion.size), 0))
            .join(Kind, Kind.id == SkillVersion.kind_id)
            .where(Kind.user_id == user_id)
        )
    else:
        kind = "Skill" if limit == "skills" else "Ghost"
        query = select(func.count()).where(Kind.user_id == user_id, Kind.kind == kind)
    return int(await session.scalar(query) or 0)


async def check_stored(
    session: AsyncSession, settings: Settings, user_id: int, adding: Mapping[Limit, int]
) -> None:
    """Refuse adding `adding` (objects; bytes for `skill_bytes`) over the user's limits.

    Call it in the writing transaction, after the request's slow checks and before its writes.
    It first locks the user's row until commit, so two concurrent creates of one user count one
    after the other (unlocked, both could count N-1 and store N+1). A no-op UPDATE locks on both
    databases: on PostgreSQL it takes FOR NO KEY UPDATE, which does not conflict with the key
    share lock an insert referencing the user holds (SELECT ... FOR UPDATE would, and two such
    transactions could deadlock); on SQLite it begins the transaction with the write lock.
    Public objects (the system user's) have no quota.
    """
    if user_id == SYSTEM_USER_ID:
        return
    limits = await limits_for(session, settings, user_id)
    counted = {name: n for name, n in adding.items() if n and limits[name] is not None}
    if not counted:
        return
    await session.execute(
        update(User)
        .where(User.id == user_id)
        .values(role=User.role)
        .execution_options(synchronize_session=False)
    )
    for name, amount in counted.items():
        maximum = limits[name]
        assert maximum is not None
        if await _stored(session, user_id, name) + amount > maximum:
            raise QuotaExceeded(name, maximum, retry_after_s=3600)
