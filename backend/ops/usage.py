"""Usage accounting: one `usage_records` row per model call, and the sums the API reports.

A turn's calls are written in the transaction that stores its answer (backend/chat/turns.py),
so the records of a conversation add up exactly to the `usage` of its stored messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Date, Table, bindparam, cast, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from backend.db.hot_writes import HotWrite
from backend.db.models import UsageRecord, User
from backend.db.types import utcnow
from chat_shell import UsageEvent

GroupBy = Literal["day", "ghost", "model", "user"]


@dataclass(frozen=True)
class TurnAccount:
    """Whose turn spends the tokens."""

    user_id: int
    ghost: str  # "ns/name"
    model: str
    conversation_id: str
    message_id: int


# Core, not the ORM's unit of work: nothing reads the rows back.
_RECORDS: Table = UsageRecord.__table__  # type: ignore[assignment]
_RECORD_COLUMNS = (
    "user_id",
    "ghost",
    "model",
    "conversation_id",
    "message_id",
    "prompt_tokens",
    "completion_tokens",
    "estimated",
    "created_at",
)
_ADD_RECORDS = HotWrite(insert(_RECORDS).values({c: bindparam(c) for c in _RECORD_COLUMNS}))


async def record_calls(
    session: AsyncConnection, account: TurnAccount, calls: Sequence[UsageEvent]
) -> None:
    """Write one row per model call in the session's transaction (the caller commits)."""
    if not calls:
        return
    now = utcnow()
    rows = [
        {
            "user_id": account.user_id,
            "ghost": account.ghost,
            "model": account.model,
            "conversation_id": account.conversation_id,
            "message_id": account.message_id,
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens,
            "estimated": call.estimated,
            "created_at": now,
        }
        for call in calls
    ]
    # One call (most turns): a plain execute, not the driver's executemany path. Nothing reads
    # the rows back: they go with the answer's INSERT (one trip on SQLite).
    await _ADD_RECORDS.defer(session, rows[0] if len(rows) == 1 else rows)


@dataclass(frozen=True)
class Totals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    estimated_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


_SUMS = (
    func.coalesce(func.sum(UsageRecord.prompt_tokens), 0),
    func.coalesce(func.sum(UsageRecord.completion_tokens), 0),
    func.count(UsageRecord.id),
    func.count(UsageRecord.id).filter(UsageRecord.estimated.is_(True)),
)


def _utc_day(session: AsyncSession) -> Any:
    """The UTC calendar day of a record, as each database spells it."""
    if session.get_bind().dialect.name == "postgresql":
        return cast(func.timezone("UTC", UsageRecord.created_at), Date)
    return func.date(UsageRecord.created_at)  # SQLite stores UTC text


def _totals(row: Sequence[Any]) -> Totals:
    return Totals(int(row[0]), int(row[1]), int(row[2]), int(row[3]))


async def summarize(
    session: AsyncSession,
    *,
    start: datetime,
    end: datetime,
    user_id: int | None,
    group_by: GroupBy | None,
) -> tuple[Totals, list[tuple[str, Totals]]]:
    """Totals of [start, end) for one user (None: everyone), and per group when asked."""
    where = [UsageRecord.created_at >= start, UsageRecord.created_at < end]
    if user_id is not None:
        where.append(UsageRecord.user_id == user_id)
    total = _totals((await session.execute(select(*_SUMS).where(*where))).one())
    if group_by is None:
        return total, []
    key: Any
    query = select(*_SUMS)
    if group_by == "day":
        key = _utc_day(session)
    elif group_by == "user":
        key = User.name
        query = query.join(User, User.id == UsageRecord.user_id)
    else:
        key = UsageRecord.ghost if group_by == "ghost" else UsageRecord.model
    rows = await session.execute(query.add_columns(key).where(*where).group_by(key).order_by(key))
    return total, [(str(row[4]), _totals(row)) for row in rows]


async def conversation_totals(
    session: AsyncSession, conversation_ids: Sequence[str]
) -> dict[str, Totals]:
    """Running totals of these conversations (absent: nothing spent yet)."""
    if not conversation_ids:
        return {}
    rows = await session.execute(
        select(*_SUMS, UsageRecord.conversation_id)
        .where(UsageRecord.conversation_id.in_(conversation_ids))
        .group_by(UsageRecord.conversation_id)
    )
    return {row[4]: _totals(row) for row in rows}
