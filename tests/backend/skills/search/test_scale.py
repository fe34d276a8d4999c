"""Search over a catalog larger than the sample its statistics are counted in (`ROWS_CAP`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert

from backend.crd.ghost import GhostSpec
from backend.db.models import Kind, SkillSearch
from backend.db.types import utcnow
from backend.kinds.store import Scope
from backend.skills.search.engine import ROWS_CAP, search
from backend.skills.search.index import index_values
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


async def add(store: Store, scope: Scope, crds: list[dict[str, Any]]) -> None:
    """Skill rows and their search rows, as the skill service indexes them, in one go (the
    service's package checks would make hundreds of skills slow to write)."""
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
    async with store.sessionmaker() as session:
        ids = (await session.execute(insert(Kind).returning(Kind.id), rows)).scalars().all()
        values = [
            index_values(i, scope.user_id, scope.namespace, c)
            for i, c in zip(ids, crds, strict=True)
        ]
        await session.execute(insert(SkillSearch), values)
        await session.commit()


async def big_catalog(store: Store) -> tuple[GhostSkills, int]:
    """alice's namespace of note-taking skills, then, written last, one about zeppelins; bob
    has a zeppelin skill too."""
    alice, bob = await store.user("alice"), await store.user("bob")
    scope = Scope(alice, "big")
    fillers = [
        crd(f"notes-{i}", f"Take notes of a call about topic {i % 40}.", "Write the notes down.")
        for i in range(FILLERS)
    ]
    await add(store, scope, fillers)
    rare = crd("zeppelin-checklist", "Make a checklist for a zeppelin flight.", "List each step.")
    await add(store, scope, [rare])
    await add(store, Scope(bob, "big"), [crd("zeppelin-guide", "Fly a zeppelin.", "Steer.")])
    spec = GhostSpec.model_validate({"skillSelector": {}})
    return GhostSkills.from_spec(scope, spec), bob


async def test_a_skill_outside_the_sample_is_found_by_its_rare_words_and_no_one_elses(
    store: Store,
) -> None:
    source, _ = await big_catalog(store)
    async with store.sessionmaker() as session:
        hits = await search(session, source, "a checklist for my zeppelin", limit=5, threshold=0)
    assert [(h.namespace, h.name) for h in hits] == [("big", "zeppelin-checklist")]


async def test_common_words_of_a_large_catalog_rank_a_bounded_set_of_its_own_skills(
    store: Store,
) -> None:
    source, _ = await big_catalog(store)
    async with store.sessionmaker() as session:
        hits = await search(session, source, "notes of a call about topic", limit=5, threshold=0)
    assert len(hits) == 5
    assert all(h.namespace == "big" and h.name.startswith("notes-") for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    async with store.sessionmaker() as session:  # one word: ranked from one term's matches
        hits = await search(session, source, "notes", limit=5, threshold=0)
    assert len(hits) == 5
    assert all(h.namespace == "big" and h.name.startswith("notes-") for h in hits)
