"""Ghost storage: validated CRDs in `kinds`; every write checks everything before it writes.

Checks needing the database come after the pure ones (`validation.py`): every skill resolves
(own in the namespace, else public; public Ghosts: public only) and, for a user's Ghost, every
secret it names exists. Checking secrets on write catches typos early; a secret deleted later
is reported by the turn that needs it. Public Ghosts get the chatting user's secrets, so theirs
are not checked here.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.crd.common import SkillPin
from backend.crd.ghost import GHOST_KIND, Ghost, current_spelling
from backend.crd.skill import SKILL_KIND
from backend.crd.stored import stored
from backend.db.models import SYSTEM_USER_ID, Kind, Secret
from backend.errors import InvalidRequest
from backend.ghosts import pins
from backend.ghosts.resolve import plugin_rows, skill_rows
from backend.ghosts.status import served, served_many
from backend.ghosts.validation import GhostInput, parse_ghost
from backend.kinds import store
from backend.kinds.store import Scope
from backend.skills import versions
from chat_shell import EgressPolicy

Action = Literal["created", "configured", "unchanged"]


async def _elsewhere(
    session: AsyncSession, caller_id: int, names: list[str]
) -> dict[str, list[str]]:
    """name -> the caller's other namespaces holding a skill of that name."""
    rows = await session.execute(
        select(Kind.name, Kind.namespace)
        .where(Kind.kind == SKILL_KIND, Kind.user_id == caller_id, Kind.name.in_(names))
        .order_by(Kind.name, Kind.namespace)
    )
    found: dict[str, list[str]] = {}
    for name, namespace in rows:
        found.setdefault(name, []).append(namespace)
    return found


def _unknown_skills(scope: Scope, unknown: list[str], elsewhere: dict[str, list[str]]) -> str:
    if scope.user_id == SYSTEM_USER_ID:
        message = (
            f"no public skill named {', '.join(unknown)} (public Ghosts use public skills only)"
        )
        fix = "publish it with `skillhive skills push --public`"
    else:
        message = (
            f"no skill named {', '.join(unknown)} in namespace {scope.namespace!r} or among "
            "public skills (a Ghost uses the skills of its own namespace, then public ones)"
        )
        fix = f"upload it to {scope.namespace!r} too, or put the Ghost in that namespace"
    if elsewhere:
        groups: dict[tuple[str, ...], list[str]] = {}
        for name, namespaces in elsewhere.items():
            groups.setdefault(tuple(namespaces), []).append(name)
        where = "; ".join(
            f"{', '.join(map(repr, names))} in namespace{'s' if len(spaces) > 1 else ''} "
            f"{', '.join(map(repr, spaces))}"
            for spaces, names in groups.items()
        )
        message += f"; you have {where}: {fix}"
    return message


async def check_references(
    session: AsyncSession, scope: Scope, ghost: GhostInput, *, caller_id: int | None = None
) -> None:
    """`caller_id`: who writes (an admin for public Ghosts); an unknown skill the caller has in
    another namespace is pointed out."""
    refs = pins.refs(ghost.ghost.spec.skills)
    skills = [r.name for r in refs]
    found = await skill_rows(session, scope, skills, lock=True)
    unknown = [n for n in skills if n not in found]
    if unknown:
        caller = scope.user_id if caller_id is None else caller_id
        elsewhere = {} if caller == SYSTEM_USER_ID else await _elsewhere(session, caller, unknown)
        raise InvalidRequest(
            _unknown_skills(scope, unknown, elsewhere),
            code="unknown_skills",
            details={"skills": unknown, "namespace": scope.namespace, "elsewhere": elsewhere},
        )
    await _check_pinned_versions(session, found, refs)
    plugins = ghost.ghost.spec.plugins or []
    have_plugins = await plugin_rows(session, scope, plugins, lock=True)
    missing_plugins = [n for n in plugins if n not in have_plugins]
    if missing_plugins:
        raise InvalidRequest(
            f"no plugin named {', '.join(missing_plugins)} in namespace {scope.namespace!r}"
            + ("" if scope.user_id == SYSTEM_USER_ID else " or among public plugins"),
            code="unknown_plugins",
            details={"plugins": missing_plugins, "namespace": scope.namespace},
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


async def _check_pinned_versions(
    session: AsyncSession, found: dict[str, Kind], refs: list[SkillPin]
) -> None:
    """Every pinned version exists now (the skill rows are share-locked, so a concurrent
    version write, which prunes, waits for this transaction and then sees the pin)."""
    wanted = [(found[r.name], r.version) for r in refs if r.version is not None]
    if not wanted:
        return
    have = await versions.existing(session, [(row.id, number) for row, number in wanted])
    missing = [(row, number) for row, number in wanted if (row.id, number) not in have]
    if not missing:
        return
    row, number = missing[0]
    raise InvalidRequest(
        f"skill {row.name!r} has no version {number} (see GET .../skills/{row.name}/versions; "
        "old versions are pruned unless a Ghost pins them)",
        code="skill_version_not_found",
        details={
            "skill": row.name,
            "version": number,
            "missing": [f"{r.name}@{n}" for r, n in missing],
        },
    )


def _content(crd: dict[str, Any]) -> tuple[Any, Any]:
    return crd["metadata"].get("labels", {}), current_spelling(crd)["spec"]


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
    caller_id: int | None = None,
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
    await check_references(session, scope, ghost, caller_id=caller_id)
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
    caller_id: int | None = None,
) -> dict[str, Any]:
    action = await prepare(session, scope, ghost, row, expected=expected, caller_id=caller_id)
    return await write(session, scope, ghost, row, action, expected=expected)


async def create(
    session: AsyncSession,
    scope: Scope,
    body: Any,
    *,
    caller_id: int,
    egress: EgressPolicy | None = None,
) -> dict[str, Any]:
    """The stored Ghost as served (with `status`)."""
    ghost = parse_ghost(body, scope, egress=egress)
    crd = await save(session, scope, ghost, None, caller_id=caller_id)
    await session.commit()
    return await served(session, scope, crd)


async def replace(
    session: AsyncSession,
    scope: Scope,
    name: str,
    body: Any,
    *,
    caller_id: int,
    expected: int | None = None,
    egress: EgressPolicy | None = None,
) -> dict[str, Any]:
    row = await store.get(session, GHOST_KIND, scope, name)
    ghost = parse_ghost(body, scope, name=name, egress=egress)
    crd = await save(session, scope, ghost, row, expected=expected, caller_id=caller_id)
    await session.commit()
    return await served(session, scope, crd)


async def get(session: AsyncSession, scope: Scope, name: str) -> dict[str, Any]:
    return await served(session, scope, (await store.get(session, GHOST_KIND, scope, name)).json)


async def get_typed(session: AsyncSession, scope: Scope, name: str) -> Ghost:
    """The stored Ghost, validated (409 `stored_crd_invalid` if it no longer validates)."""
    return stored(Ghost, (await store.get(session, GHOST_KIND, scope, name)).json)


async def list_page(
    session: AsyncSession, scopes: list[Scope], *, limit: int, token: str | None
) -> dict[str, Any]:
    """`{items, continue}`: a page of Ghosts as served (users never own namespace `public`,
    so an item's namespace tells its scope)."""
    page = await store.list_page(session, GHOST_KIND, scopes, limit=limit, token=token)
    by_namespace = {scope.namespace: scope for scope in scopes}
    stored = [json.loads(item) for item in page.items_json]
    items = await served_many(
        session, [(by_namespace[crd["metadata"]["namespace"]], crd) for crd in stored]
    )
    return {"items": items, "continue": page.next_token}


async def delete(
    session: AsyncSession, scope: Scope, name: str, *, expected: int | None = None
) -> None:
    row = await store.get(session, GHOST_KIND, scope, name)
    store.check_version(row, expected)
    await session.delete(row)
    await session.commit()
