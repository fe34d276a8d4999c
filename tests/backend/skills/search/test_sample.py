"""A selection's sample word counts are kept per process and follow every write (sample.py).

Writes go through the skill service in their own sessions, which never touch the kept counts:
what another process's write looks like to this one. Each search after a write must score
exactly as a process that kept nothing."""

from __future__ import annotations

from sqlalchemy import delete, select

from backend.db.models import Kind, SkillSearch
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.search import sample
from backend.skills.search.engine import ROWS_CAP
from tests.support import zips
from tests.support.kept_counts import everything, fresh, hits, kept
from tests.support.search_catalog import big_catalog
from tests.support.skill_store import Store


async def test_counts_are_kept_while_the_sample_is_unchanged_and_recounted_after_a_write(
    store: Store,
) -> None:
    scope = Scope(await store.user("alice"), "dev")
    source = everything(scope)
    await store.skill(scope, "tides", "Predict the tides of a harbour.", body="Read the table.")
    await store.skill(scope, "avalanche", "Rate avalanche danger on a snowy slope.")
    assert await hits(store, source, "snowy slope") == await fresh(store, source, "snowy slope")
    before = await hits(store, source, "harbour tides")
    first = await kept(store, source)
    assert first is not None and first.rows == 2 and first.df["harbour"] == 1
    await hits(store, source, "avalanche")
    assert await kept(store, source) is first  # reused, not recounted
    # Another writer gives the avalanche skill the harbour: its IDF halves.
    data = zips.skill("avalanche", description="Rate avalanche danger in a harbour.")
    async with store.sessionmaker() as session:
        await service.replace(session, store.settings, scope, "avalanche", data)
    after = await hits(store, source, "harbour tides")
    second = await kept(store, source)
    assert second is not None and second is not first and second.df["harbour"] == 2
    assert after == await fresh(store, source, "harbour tides")
    assert dict(after)["tides"] < dict(before)["tides"]
    # Disabled and deleted skills leave the sample: their words are no longer counted.
    async with store.sessionmaker() as session:
        await service.patch(session, scope, "avalanche", labels=None, enabled=False)
    alone = await hits(store, source, "harbour tides")
    third = await kept(store, source)
    assert third is not None and third.rows == 1 and "avalanch" not in third.df
    assert alone == await fresh(store, source, "harbour tides")
    async with store.sessionmaker() as session:
        await service.delete(session, scope, "tides")
    assert await hits(store, source, "harbour tides") == []
    last = await kept(store, source)
    assert last is not None and (last.rows, dict(last.df)) == (0, {})


async def test_a_large_catalog_scores_as_a_fresh_process_after_its_sample_changes(
    store: Store,
) -> None:
    source, _ = await big_catalog(store)
    query = "a checklist of notes for my zeppelin"
    sample.forget_all()
    first = await hits(store, source, query)
    words = await kept(store, source)
    assert words is not None and words.rows == ROWS_CAP
    assert "zeppelin-checklist" in dict(first)  # outside the sample: found by its probe
    # A fifth of the sample goes: other rows take its place, counted anew.
    async with store.sessionmaker() as session:
        ids = (
            await session.scalars(
                select(SkillSearch.kind_id)
                .where(SkillSearch.name.like("notes-%"))
                .order_by(SkillSearch.kind_id)
                .limit(100)
            )
        ).all()
        await session.execute(delete(Kind).where(Kind.id.in_(ids)))
        await session.commit()
    after = await hits(store, source, query)
    recounted = await kept(store, source)
    assert recounted is not None and recounted is not words and recounted.rows == ROWS_CAP
    assert after == await fresh(store, source, query)
