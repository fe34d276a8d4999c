"""Ghost storage: validated CRDs in `kinds`; every write checks everything before it writes.

Checks needing the database come after the pure ones (`validation.py`): every skill resolves
(own in the namespace, else public; public Ghosts: public only) and, for a user's Ghost, every
secret it names exists. Checking secrets on write catches typos early; a secret deleted later
is reported by the turn that needs it. Public Ghosts get the chatting user's secrets, so theirs
are not checked here.
"""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.crd.ghost import GHOST_KIND
from backend.db.models import SYSTEM_USER_ID, Kind, Secret
from backend.errors import InvalidRequest
from backend.ghosts.resolve import skill_rows
from backend.ghosts.validation import GhostInput, parse_ghost
from backend.kinds import store
from backend.kinds.store import Scope
from chat_shell.net import EgressPolicy

Action = Literal["created", "configured", "unchanged"]


async def check_references(session: AsyncSession, scope: Scope, ghost: GhostInput) -> None:
    skills = ghost.ghost.spec.skills
    found = await skill_rows(session, scope, skills, lock=True)
    unknown = [n for n in skills if n not in found]
    if unknown:
        where = "public skills" if scope.user_id == SYSTEM_USER_ID else "your skills or public"
        raise InvalidRequest(
            f"no such skill in {where}: {', '.join(unknown)}",
            code="unknown_skills",
            details={"skills": unknown},
        )
    if scope.user_id == SYSTEM_USER_ID or not ghost.secrets:
        return
    have = set(
        await session.scalars(
            select(Secret.name).where(
                Secret.user_id == scope.user_id, Secret.name.in_(ghost.secrets)
            )
        )
    )
    missing = sorted(ghost.secrets - have)
    if missing:
        raise InvalidRequest(
            f"no such secret: {', '.join(missing)} (set it with PUT /api/v1/secrets/{{name}})",
            code="unknown_secrets",
            details={"secrets": missing},
        )


def _content(crd: dict[str, Any]) -> tuple[Any, Any]:
    return crd["metadata"].get("labels", {}), crd["spec"]


async def find(session: AsyncSession, scope: Scope, name: str) -> Kind | None:
    return await session.scalar(
        select(Kind).where(
            Kind.kind == GHOST_KIND,
            Kind.user_id == scope.user_id,
            Kind.namespace == scope.namespace,
            Kind.name == name,
        )
    )


async def prepare(
    session: AsyncSession,
    scope: Scope,
    ghost: GhostInput,
    row: Kind | None,
    *,
    expected: int | None = None,
) -> Action:
    """What writing `ghost` over `row` does, after every check; writes nothing.

    `metadata.resourceVersion` in the body and `expected` (If-Match) are both preconditions.
    The skills it relies on stay share-locked until the transaction ends (see `skill_rows`).
    """
    if row is not None:
        store.check_version(row, ghost.ghost.metadata.resource_version)
        store.check_version(row, expected)
        if _content(ghost.crd) == _content(row.json):
            return "unchanged"
    await check_references(session, scope, ghost)
    return "created" if row is None else "configured"


async def write(
    session: AsyncSession,
    scope: Scope,
    ghost: GhostInput,
    row: Kind | None,
    action: Action,
    *,
    expected: int | None = None,
) -> dict[str, Any]:
    """Carry out a prepared action (flushed, not committed); a taken name is 409."""
    if row is None:
        name = ghost.ghost.metadata.name
        return (await store.insert(session, GHOST_KIND, scope, name, ghost.crd)).json
    if action == "unchanged":
        return row.json
    return (await store.replace(session, row, ghost.crd, expected=expected)).json


async def save(
    session: AsyncSession,
    scope: Scope,
    ghost: GhostInput,
    row: Kind | None,
    *,
    expected: int | None = None,
) -> dict[str, Any]:
    action = await prepare(session, scope, ghost, row, expected=expected)
    return await write(session, scope, ghost, row, action, expected=expected)


async def create(
    session: AsyncSession, scope: Scope, body: Any, *, egress: EgressPolicy | None = None
) -> dict[str, Any]:
    crd = await save(session, scope, parse_ghost(body, scope, egress=egress), None)
    await session.commit()
    return crd


async def replace(
    session: AsyncSession,
    scope: Scope,
    name: str,
    body: Any,
    *,
    expected: int | None = None,
    egress: EgressPolicy | None = None,
) -> dict[str, Any]:
    row = await store.get(session, GHOST_KIND, scope, name)
    ghost = parse_ghost(body, scope, name=name, egress=egress)
    crd = await save(session, scope, ghost, row, expected=expected)
    await session.commit()
    return crd


async def get(session: AsyncSession, scope: Scope, name: str) -> dict[str, Any]:
    return (await store.get(session, GHOST_KIND, scope, name)).json


async def delete(
    session: AsyncSession, scope: Scope, name: str, *, expected: int | None = None
) -> None:
    row = await store.get(session, GHOST_KIND, scope, name)
    store.check_version(row, expected)
    await session.delete(row)
    await session.commit()
