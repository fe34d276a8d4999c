"""A catalog larger than the sample search statistics are counted in (`ROWS_CAP`), written in
bulk: the tests of search at scale and of the kept sample share it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from backend.crd.ghost import GhostSpec
from backend.db.models import Kind, SkillLabel, SkillSearch
from backend.db.types import utcnow
from backend.kinds.store import Scope
from backend.skills.search.engine import ROWS_CAP
from backend.skills.search.index import index_values, label_values
from backend.skills.search.selection import GhostSkills
from tests.support.skill_store import Store

FILLERS = ROWS_CAP + 100


def crd(name: str, description: str, prompt: str) -> dict[str, Any]:
    return {
        "apiVersion": "skillhive.io/v1",
        "kind": "Skill",
        "metadata": {"name": name},
        "spec": {"description": description, "prompt": prompt},
        "status": {"enabled": True, "sha256": name},
    }


async def write_skills(session: AsyncSession, scope: Scope, crds: list[dict[str, Any]]) -> None:
    """Skill rows with their search rows and labels, as the skill service indexes them, in one
    go (flushed, not committed): the service's package checks would make thousands of skills
    slow to write. `bench/catalog.py` seeds its catalogs with it too."""
    now = utcnow()
    rows = [
        {
            "user_id": scope.user_id,
            "kind": "Skill",
            "namespace": scope.namespace,
            "name": c["metadata"]["name"],
            "json": c,
            "is_active": True,
            "resource_version": 1,
            "created_at": now,
            "updated_at": now,
        }
        for c in crds
    ]
    ids = (await session.execute(insert(Kind).returning(Kind.id), rows)).scalars().all()
    values = [
        index_values(i, scope.user_id, scope.namespace, c) for i, c in zip(ids, crds, strict=True)
    ]
    await session.execute(insert(SkillSearch), values)
    labels = [label for i, c in zip(ids, crds, strict=True) for label in label_values(i, c)]
    if labels:
        await session.execute(insert(SkillLabel), labels)


async def add(store: Store, scope: Scope, crds: list[dict[str, Any]]) -> None:
    async with store.sessionmaker() as session:
        await write_skills(session, scope, crds)
        await session.commit()


async def big_catalog(store: Store) -> tuple[GhostSkills, int]:
    """alice's namespace of note-taking skills, then, written last, one about zeppelins and one
    whose rare words are in its instructions only; bob has a zeppelin skill too."""
    alice, bob = await store.user("alice"), await store.user("bob")
    scope = Scope(alice, "big")
    fillers = [
        crd(f"notes-{i}", f"Take notes of a call about topic {i % 40}.", "Write the notes down.")
        for i in range(FILLERS)
    ]
    await add(store, scope, fillers)
    rare = crd("zeppelin-checklist", "Make a checklist for a zeppelin flight.", "List each step.")
    # Its rare words are in its instructions only.
    inside = crd("airship-log", "Keep a log of an airship trip.", "Check the ballonet valve.")
    await add(store, scope, [rare, inside])
    await add(store, Scope(bob, "big"), [crd("zeppelin-guide", "Fly a zeppelin.", "Steer.")])
    spec = GhostSpec.model_validate({"skillSelector": {}})
    return GhostSkills.from_spec(scope, spec), bob
