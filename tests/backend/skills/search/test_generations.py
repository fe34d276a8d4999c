"""Each user's skill generation follows every write a search reads, on both databases, and a
search keeps its counts and probe answers only while its owners' generations hold (sample.py).

Writes go through sessions that never touch the kept counts: what another process's write
looks like to this one. Each search after a write must score exactly as a fresh process."""

from __future__ import annotations

from sqlalchemy import delete, insert, select, update

from backend.crd.ghost import GhostSpec
from backend.db.models import Kind, SkillGeneration, SkillLabel, SkillSearch
from backend.db.types import utcnow
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.search import sample
from backend.skills.search.selection import PUBLIC_SKILLS, GhostSkills
from tests.support.kept_counts import counts_query, everything, fresh, hits, kept
from tests.support.search_catalog import add, big_catalog, crd
from tests.support.skill_store import Store


async def generation(store: Store, user_id: int) -> int | None:
    async with store.sessionmaker() as session:
        return await session.scalar(
            select(SkillGeneration.generation).where(SkillGeneration.user_id == user_id)
        )


def kind_row(scope: Scope, kind: str, name: str) -> dict[str, object]:
    now = utcnow()
    return {
        "user_id": scope.user_id,
        "kind": kind,
        "namespace": scope.namespace,
        "name": name,
        "json": {"kind": kind, "metadata": {"name": name}, "spec": {}},
        "is_active": True,
        "resource_version": 1,
        "created_at": now,
        "updated_at": now,
    }


async def test_every_write_a_search_reads_draws_its_owners_generation(store: Store) -> None:
    alice, bob = await store.user("alice"), await store.user("bob")
    scope = Scope(alice, "dev")
    assert await generation(store, alice) is None  # nothing written yet
    seen: list[int] = []

    async def drawn() -> None:
        value = await generation(store, alice)
        assert value is not None and value not in seen, (value, seen)
        seen.append(value)

    await store.skill(scope, "tides", "Predict the tides of a harbour.")
    await drawn()
    async with store.sessionmaker() as session:
        await service.patch(session, scope, "tides", labels={"team": "sea"}, enabled=None)
    await drawn()
    # Another user's write, and a write of a kind no search reads, leave alice's alone.
    await store.skill(Scope(bob, "dev"), "avalanche", "Rate avalanche danger.")
    assert await generation(store, bob) is not None
    async with store.sessionmaker() as session:
        await session.execute(insert(Kind).values(**kind_row(scope, "Ghost", "helper")))
        await session.commit()
    assert await generation(store, alice) == seen[-1]
    # A write rolled back draws nothing.
    async with store.sessionmaker() as session:
        await session.execute(update(SkillSearch).values(enabled=False))
        await session.rollback()
    assert await generation(store, alice) == seen[-1]
    # Plugins decide which public plugin skills a Ghost sees: their rows draw too.
    async with store.sessionmaker() as session:
        await session.execute(insert(Kind).values(**kind_row(scope, "Plugin", "sales")))
        await session.commit()
    await drawn()
    plugin = (Kind.kind == "Plugin") & (Kind.user_id == alice)
    async with store.sessionmaker() as session:
        await session.execute(update(Kind).where(plugin).values(resource_version=2))
        await session.commit()
    await drawn()
    async with store.sessionmaker() as session:
        await session.execute(delete(Kind).where(plugin))
        await session.commit()
    await drawn()
    # A label written on its own draws for the skill's owner.
    async with store.sessionmaker() as session:
        kind_id = await session.scalar(
            select(SkillSearch.kind_id).where(SkillSearch.name == "tides")
        )
        await session.execute(insert(SkillLabel).values(kind_id=kind_id, key="tier", value="1"))
        await session.commit()
    await drawn()
    # A direct update of a search row, and a skill's row deleted (its index rows cascade).
    async with store.sessionmaker() as session:
        own = SkillSearch.user_id == alice
        await session.execute(update(SkillSearch).where(own).values(chat=True))
        await session.commit()
    await drawn()
    async with store.sessionmaker() as session:
        await session.execute(delete(Kind).where(Kind.kind == "Skill", Kind.user_id == alice))
        await session.commit()
    await drawn()
    async with store.sessionmaker() as session:
        assert (await session.scalars(select(SkillSearch.name))).all() == ["avalanche"]


async def test_a_write_beside_the_sample_keeps_its_counts_under_the_new_generation(
    store: Store,
) -> None:
    scope = Scope(await store.user("alice"), "dev")
    source = everything(scope)
    await store.skill(scope, "tides", "Predict the tides of a harbour.", body="Read the table.")
    await store.skill(scope, "avalanche", "Rate avalanche danger on a snowy slope.")
    before = await fresh(store, source, "harbour tides")
    first = await kept(store, source)
    assert first is not None
    await hits(store, source, "avalanche")
    assert await kept(store, source) is first  # the generations held: nothing read again
    # The same owner's write in another namespace: a new generation, the same sample.
    await store.skill(Scope(scope.user_id, "other"), "harbour", "All about a harbour.")
    assert await hits(store, source, "harbour tides") == before
    second = await kept(store, source)
    assert second is not None and second is not first
    assert second.generation != first.generation
    assert (second.fingerprint, second.rows, second.df) == (first.fingerprint, 2, first.df)
    assert before == await fresh(store, source, "harbour tides")


async def test_a_public_write_recounts_only_the_ghosts_that_use_public_skills(
    store: Store,
) -> None:
    scope = Scope(await store.user("alice"), "dev")
    own = everything(scope)
    spec = GhostSpec.model_validate({"skillSelector": {}, "includePublicSkills": True})
    with_public = GhostSkills.from_spec(scope, spec)
    await store.skill(scope, "tides", "Predict the tides of a harbour.")
    await store.public_skill("harbour-pilot", "Pilot a ship into a harbour.")
    sample.forget_all()
    await hits(store, own, "harbour")
    await hits(store, with_public, "harbour")
    mine, both = await kept(store, own), await kept(store, with_public)
    assert mine is not None and both is not None and (mine.rows, both.rows) == (1, 2)
    await store.public_skill("harbour-tides", "Tides of a harbour.")
    found = await hits(store, own, "harbour"), await hits(store, with_public, "harbour")
    assert await kept(store, own) is mine  # its owner wrote nothing: nothing read again
    now = await kept(store, with_public)
    assert now is not None and now.rows == 3
    assert found == (await fresh(store, own, "harbour"), await fresh(store, with_public, "harbour"))


async def test_probe_answers_are_kept_until_the_owners_write(store: Store) -> None:
    source, _ = await big_catalog(store)
    query = "care for my quokka or my wombat"
    assert await fresh(store, source, query) == await hits(store, source, query)
    words = await kept(store, source)
    assert words is not None  # no row holds either
    assert (words.probes.get("quokka"), words.probes.get("wombat")) == (False, False)
    # Answered: the next search's statement probes nothing.
    assert (await counts_query(store, source, query))._unanswered() == []
    await hits(store, source, query)
    assert (await kept(store, source)) is words
    # Another writer adds a skill holding one of them, last in the sample's order: the sample
    # stays as it was, and the kept "no" must not hide the skill, even after a search that
    # asked only for the other.
    await add(store, source.owner, [crd("wombat-care", "Care for a wombat.", "Feed it.")])
    async with store.sessionmaker() as session:
        last = SkillSearch.name == "wombat-care"
        await session.execute(update(SkillSearch).where(last).values(revision=(1 << 52) - 1))
        await session.commit()
    assert await hits(store, source, "quokka") == []
    same = await kept(store, source)
    assert same is not None and same.fingerprint == words.fingerprint
    found = await hits(store, source, "wombat")
    assert "wombat-care" in dict(found)
    assert found == await fresh(store, source, "wombat")


async def test_an_owners_plugin_row_changes_the_counts_of_the_ghosts_that_use_the_plugin(
    store: Store,
) -> None:
    alice = await store.user("alice")
    scope = Scope(alice, "dev")
    await add(
        store,
        PUBLIC_SKILLS,
        [
            crd("sales/call-prep", "Prepare a sales call about harbour tides.", "Plan it."),
            crd("sales/pitch", "Pitch the harbour to a buyer.", "Tell it well."),
        ],
    )
    await store.skill(scope, "tides", "Predict the tides of a harbour.")
    source = GhostSkills.from_spec(
        scope, GhostSpec.model_validate({"skillSelector": {}, "plugins": ["sales"]})
    )
    query = "harbour tides"
    before = await fresh(store, source, query)
    assert {name for name, _ in before} == {"sales/call-prep", "sales/pitch", "tides"}
    first = await kept(store, source)
    assert first is not None and first.rows == 3
    # alice's own plugin of that name shadows the public one: its skills leave the selection.
    async with store.sessionmaker() as session:
        await session.execute(insert(Kind).values(**kind_row(scope, "Plugin", "sales")))
        await session.commit()
    after = await hits(store, source, query)
    now = await kept(store, source)
    assert now is not None and now.rows == 1
    assert [name for name, _ in after] == ["tides"]
    assert dict(after)["tides"] != dict(before)["tides"]  # scored over one row, not three
    assert after == await fresh(store, source, query)
