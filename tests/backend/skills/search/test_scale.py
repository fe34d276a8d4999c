"""Search over a catalog larger than the sample its statistics are counted in (`ROWS_CAP`)."""

from __future__ import annotations

from backend.skills.search.engine import search
from tests.support.search_catalog import FILLERS, big_catalog
from tests.support.skill_store import Store


async def test_a_skill_outside_the_sample_is_found_by_its_rare_words_and_no_one_elses(
    store: Store,
) -> None:
    source, _ = await big_catalog(store)
    async with store.sessionmaker() as session:
        hits = await search(session, source, "a checklist for my zeppelin", limit=5, threshold=0)
    assert [(h.namespace, h.name) for h in hits] == [("big", "zeppelin-checklist")]


async def test_a_rare_word_is_found_beside_a_word_hundreds_of_skills_hold(store: Store) -> None:
    """The engine ranks a bounded pool of matches: the rows holding the request's rarest words
    go in first, not after however many rows hold its common one."""
    source, _ = await big_catalog(store)
    async with store.sessionmaker() as session:
        hits = await search(session, source, "notes about my zeppelin", limit=5, threshold=0)
    assert hits[0].name == "zeppelin-checklist"


async def test_a_skill_whose_rare_words_are_in_its_instructions_only_is_found(store: Store) -> None:
    """A rare word counts in the body as in a small catalog, though the engine ranks name, tags,
    "when to use" and description only: the rows holding it come on top of the ranked ones."""
    source, _ = await big_catalog(store)
    async with store.sessionmaker() as session:
        alone = await search(session, source, "the ballonet valve", limit=5, threshold=0)
        beside = await search(session, source, "notes on the ballonet valve", limit=5, threshold=0)
    assert [(h.namespace, h.name) for h in alone] == [("big", "airship-log")]
    assert beside[0].name == "airship-log"  # its rare words outweigh the notes' common one
    assert {h.name for h in beside[1:]} <= {f"notes-{i}" for i in range(FILLERS)}


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
