"""Ghosts that rely on a skill, checked before the skill is deleted.

A user's skill is relied on by that user's Ghosts in the same namespace that list it. A public
skill is relied on by public Ghosts and by every user Ghost that lists the name without an own
skill of that name in its namespace (those resolve to the public one).

The 409 names only Ghosts the deleting owner may see: a user's own Ghosts, or public Ghosts
when an admin deletes a public skill; other users' Ghosts are only counted (`others`).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import exists, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement

from backend.crd.common import parse_skill_ref
from backend.crd.ghost import GHOST_KIND, current_spelling
from backend.crd.skill import SKILL_KIND
from backend.db.models import SYSTEM_USER_ID, Kind
from backend.errors import Conflict
from backend.kinds import store
from backend.kinds.store import Scope


def _lists_skill(dialect: str, name: str) -> ColumnElement[bool]:
    """Whether a Ghost row lists skill `name`, bare or pinned (`name@3`). Names hold only
    `a-z0-9-/`, so the LIKE pattern has no wildcard of its own."""
    # preloadSkills is a subset of skills (validated on write), so `skills` is enough.
    if dialect == "postgresql":
        elements = "jsonb_array_elements_text(CAST(kinds.json -> 'spec' -> 'skills' AS jsonb))"
    else:
        elements = "json_each(kinds.json, '$.spec.skills')"
    column = "s.value"
    clause = text(
        f"EXISTS (SELECT 1 FROM {elements} AS s WHERE {column} = :skill OR {column} LIKE :pinned)"
    )
    return clause.bindparams(skill=name, pinned=f"{name}@%")  # type: ignore[return-value]


async def referencing_ghosts(session: AsyncSession, skill: Scope, name: str) -> list[Kind]:
    """The Ghost rows whose skill `name` resolves to the skill in scope `skill`."""
    lists = _lists_skill(session.get_bind().dialect.name, name)
    stmt = select(Kind).where(Kind.kind == GHOST_KIND, lists)
    if skill.user_id != SYSTEM_USER_ID:
        stmt = stmt.where(Kind.user_id == skill.user_id, Kind.namespace == skill.namespace)
    else:
        own = aliased(Kind)
        shadowed = exists().where(
            own.kind == SKILL_KIND,
            own.user_id == Kind.user_id,
            own.namespace == Kind.namespace,
            own.name == name,
        )
        stmt = stmt.where(or_(Kind.user_id == SYSTEM_USER_ID, ~shadowed))
    return list(await session.scalars(stmt.order_by(Kind.namespace, Kind.name, Kind.id)))


def _without(crd: dict[str, Any], name: str) -> dict[str, Any]:
    crd = current_spelling(crd)
    spec = dict(crd["spec"])
    for key in ("skills", "preloadSkills"):
        spec[key] = [r for r in spec.get(key, []) if parse_skill_ref(r).name != name]
    return {**crd, "metadata": dict(crd["metadata"]), "spec": spec}


async def release_skill(session: AsyncSession, skill: Scope, name: str, *, force: bool) -> None:
    """Before deleting the skill: 409 `skill_referenced`, or with `force` drop the references.

    Runs in the delete's transaction (nothing is committed here). The skill row is locked first
    so a Ghost write relying on it (which holds a shared lock) finishes before the check.
    """
    await session.execute(
        select(Kind.id)
        .where(
            Kind.kind == SKILL_KIND,
            Kind.user_id == skill.user_id,
            Kind.namespace == skill.namespace,
            Kind.name == name,
        )
        .with_for_update()
    )
    ghosts = await referencing_ghosts(session, skill, name)
    if not ghosts:
        return
    if force:
        for row in ghosts:
            await store.replace(session, row, _without(row.json, name))
        return
    # A user only ever matches their own Ghosts; for a public skill only public ones are shown.
    visible = [r for r in ghosts if r.user_id == skill.user_id]
    raise Conflict(
        f"skill {name!r} is used by {len(ghosts)} Ghost(s); remove it from them first, "
        "or delete with ?force=true to remove those references",
        code="skill_referenced",
        details={
            "skill": name,
            "ghosts": [f"{r.namespace}/{r.name}" for r in visible],
            "others": len(ghosts) - len(visible),
        },
    )
