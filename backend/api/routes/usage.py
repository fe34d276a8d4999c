"""`GET /usage`: who used what. The caller's own totals; admins any user's, or everyone's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from backend.api.deps import CurrentUser, SessionDep
from backend.api.errors import errors
from backend.auth import service as users
from backend.errors import Forbidden, InvalidRequest
from backend.ops.usage import GroupBy, Totals, summarize

router = APIRouter(tags=["operations"])

DEFAULT_DAYS = 30


class UsageTotals(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    calls: int = Field(description="model calls")
    estimated_calls: int = Field(description="calls whose provider reported no usage")

    @classmethod
    def of(cls, totals: Totals) -> UsageTotals:
        return cls(
            prompt_tokens=totals.prompt_tokens,
            completion_tokens=totals.completion_tokens,
            total_tokens=totals.total_tokens,
            calls=totals.calls,
            estimated_calls=totals.estimated_calls,
        )


class UsageGroup(UsageTotals):
    key: str = Field(description="the day (YYYY-MM-DD, UTC), Ghost, model or user name")


class UsageReport(BaseModel):
    from_: datetime = Field(alias="from", serialization_alias="from")
    to: datetime
    user: str | None = Field(description="whose usage; null: every user")
    group_by: GroupBy | None
    totals: UsageTotals
    groups: list[UsageGroup]


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@router.get("/usage", response_model_by_alias=True, responses=errors(403, 404, 422))
async def usage(
    caller: CurrentUser,
    session: SessionDep,
    from_: Annotated[datetime | None, Query(alias="from")] = None,
    to: datetime | None = None,
    group_by: GroupBy | None = None,
    user: Annotated[str | None, Query(max_length=64)] = None,
) -> UsageReport:
    """Tokens of model calls in [from, to) (default: the last 30 days), optionally grouped by
    `day`, `ghost` or `model`. Admins may name another `user`, or ask `group_by=user` for all
    users (non-admins: 403 `admin_required`)."""
    end = _aware(to) if to else datetime.now(UTC)
    try:
        start = _aware(from_) if from_ else end - timedelta(days=DEFAULT_DAYS)
    except OverflowError:  # `to` in the first days of year 1
        raise InvalidRequest("`to` is too early", code="invalid_range") from None
    if start > end:
        raise InvalidRequest("`from` is after `to`", code="invalid_range")
    if (user is not None and user != caller.name) or group_by == "user":
        if not caller.is_admin:
            raise Forbidden("only admins see other users' usage", code="admin_required")
    user_id: int | None = caller.id
    name: str | None = caller.name
    if group_by == "user" and user is None:
        user_id = name = None
    elif user is not None and user != caller.name:
        target = await users.get_user_by_name(session, user)
        user_id, name = target.id, target.name
    totals, groups = await summarize(
        session, start=start, end=end, user_id=user_id, group_by=group_by
    )
    return UsageReport.model_validate(
        {
            "from": start,
            "to": end,
            "user": name,
            "group_by": group_by,
            "totals": UsageTotals.of(totals),
            "groups": [UsageGroup(key=key, **UsageTotals.of(t).model_dump()) for key, t in groups],
        }
    )
