"""Which package version of each skill a conversation uses, and the `skill_changed` event.

A turn knows the version of every skill it starts with or loads (the Ghost's pin, else the
current version: backend/chat/catalog.py). A good turn records those of the skills still loaded
at its end (`conversation_skills`). The next turn compares the skills it retains with that record
and, before the model runs, says which changed: the skill was updated or rolled back meanwhile
(it now uses the new version), or the Ghost's pin moved. A pinned skill whose pin stayed put
does not change, whatever happens to the skill.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from backend.db.models import ConversationSkill
from backend.db.sqlite_driver import defer
from backend.db.types import utcnow


class SkillChangedEvent(BaseModel):
    """A skill the conversation had loaded is another version this turn (sent after `start`,
    before the model runs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["skill_changed"] = "skill_changed"
    skill: str
    from_version: int
    to_version: int
    pinned: bool  # the turn uses `to_version` because the Ghost pins it


@dataclass(frozen=True)
class UsedVersion:
    version: int
    pinned: bool


# Built once (every turn reads it): see backend/chat/conversations.py.
_RECORDED = select(ConversationSkill.skill, ConversationSkill.version).where(
    ConversationSkill.conversation_id == bindparam("cid")
)


async def recorded(session: AsyncSession, conversation_id: str) -> dict[str, int]:
    rows = await session.execute(_RECORDED, {"cid": conversation_id})
    return {row[0]: row[1] for row in rows}


def changes(before: Mapping[str, int], now: Mapping[str, UsedVersion]) -> list[SkillChangedEvent]:
    """The skills a turn starts with whose version differs from the recorded one, by name."""
    return [
        SkillChangedEvent(
            skill=name, from_version=before[name], to_version=used.version, pinned=used.pinned
        )
        for name, used in sorted(now.items())
        if name in before and before[name] != used.version
    ]


async def record(
    session: AsyncConnection, conversation_id: str, used: Mapping[str, UsedVersion]
) -> None:
    """Upsert the versions in the caller's transaction (committed with the turn's answer)."""
    if not used:
        return
    rows = [
        {
            "conversation_id": conversation_id,
            "skill": name,
            "version": u.version,
            "pinned": u.pinned,
            "updated_at": utcnow(),
        }
        for name, u in sorted(used.items())
    ]
    dialect = session.dialect.name
    insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(ConversationSkill).values(rows)
    await defer(  # nothing reads the answer: it goes with the answer's INSERT
        session,
        stmt.on_conflict_do_update(
            index_elements=["conversation_id", "skill"],
            set_={
                "version": stmt.excluded.version,
                "pinned": stmt.excluded.pinned,
                "updated_at": stmt.excluded.updated_at,
            },
        ),
    )
