"""A compact catalog's best matches read ahead (backend/chat/catalog.py `_large`, engine.Prefetch).

Once a selection's sample counts are kept and hold more rows than the budget, a turn reads no
catalog row: one statement confirms the sample, and on PostgreSQL the search's candidates,
planned on the kept counts, come in the same round trip. Whatever the kept counts say, every
turn must list exactly what the search answers for its message, as a process that kept nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from backend.chat import catalog
from backend.chat.catalog import COMPACT_MATCHES, SkillSpecCache, TurnSkills, turn_skills
from backend.config import Settings
from backend.crd.ghost import GhostSpec
from backend.db import pipeline
from backend.db.engine import create_engine, create_sessionmaker
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.search import engine, sample
from backend.skills.search.condition import Where
from backend.skills.search.engine import search
from backend.skills.search.selection import GhostSkills
from tests.support import zips
from tests.support.search_catalog import big_catalog
from tests.support.skill_store import Store

THRESHOLD = 0.0  # every match counts: the lists compared are as long as they can be
SKILLS = {
    "tides": "Predict the tides of a harbour for sailors.",
    "avalanche": "Rate avalanche danger on a snowy slope.",
    "charts": "Draw charts of numbers.",
    "knots": "Tie sailing knots on a harbour boat.",
    "maps": "Read nautical maps of a harbour.",
    "snow": "Measure snow depth on a slope.",
}


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    engine = create_engine(database_url)
    try:
        yield Store(create_sessionmaker(engine), Settings(database_url=database_url))
    finally:
        await engine.dispose()


class Statements:
    """What `catalog.run_all` was asked to run together, call by call, and how many statements
    the search ran on its own."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[int] = []
        self.searched = 0
        together, alone = pipeline.run_all, engine._rows

        async def counted(
            session: AsyncSession, statements: Sequence[tuple[str, Mapping[str, Any]]]
        ) -> list[list[Any]]:
            self.calls.append(len(statements))
            return await together(session, statements)

        async def searched(session: AsyncSession, sql: str, where: Where) -> Sequence[Any]:
            self.searched += 1
            return await alone(session, sql, where)

        monkeypatch.setattr(catalog, "run_all", counted)
        monkeypatch.setattr(engine, "_rows", searched)


def everything(scope: Scope) -> GhostSkills:
    return GhostSkills.from_spec(scope, GhostSpec.model_validate({"skillSelector": {}}))


async def turn(store: Store, source: GhostSkills, message: str, budget: int = 10) -> TurnSkills:
    async with store.sessionmaker() as session:
        return await turn_skills(
            session,
            source,
            SkillSpecCache(),
            budget_tokens=budget,
            message=message,
            wanted=[],
            threshold=THRESHOLD,
        )


async def best(store: Store, source: GhostSkills, message: str) -> list[str]:
    """The search's best matches, as a process that kept no counts finds them."""
    sample.forget_all()
    async with store.sessionmaker() as session:
        hits = await search(session, source, message, limit=COMPACT_MATCHES, threshold=THRESHOLD)
    return [h.name for h in hits]


async def listed(store: Store, source: GhostSkills, message: str) -> list[str]:
    found = await turn(store, source, message)
    assert found.search  # compact
    return [e.name for e in found.catalog]


async def six_skills(store: Store) -> GhostSkills:
    scope = Scope(await store.user("alice"), "dev")
    for name, description in SKILLS.items():
        await store.skill(scope, name, description)
    return everything(scope)


async def test_once_the_sample_is_kept_a_turn_reads_no_catalog_row_and_lists_the_same_matches(
    store: Store, db_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = await six_skills(store)
    statements = Statements(monkeypatch)
    message = "which harbour has the best tides?"
    expected = await best(store, source, message)
    assert expected[0] == "tides"
    sample.forget_all()
    statements.searched = 0
    assert await listed(store, source, message) == expected  # counts the sample: `_sized`
    assert statements.calls == [] and statements.searched == 1  # the candidates
    statements.searched = 0
    for _ in range(2):  # the kept sample holds 6 rows, the budget at most 1: `_large`
        assert await listed(store, source, message) == expected
    # PostgreSQL sends the candidates with the sample's statement and the search uses their
    # rows; SQLite has no round trip to save: the search reads its candidates itself.
    postgres = db_backend == "postgresql"
    assert statements.calls == ([2, 2] if postgres else [1, 1])
    assert statements.searched == (0 if postgres else 2)
    other = "is the snowy slope safe?"
    assert await listed(store, source, other) == await best(store, source, other)


async def test_a_write_since_the_counts_were_kept_lists_what_a_fresh_process_finds(
    store: Store,
) -> None:
    source = await six_skills(store)
    message = "which harbour has the best tides?"
    await listed(store, source, message)  # keeps the counts
    # Another writer makes "charts" the skill of harbour tides: the sample's counts change.
    data = zips.skill("charts", description="Charts of harbour tides, the best tides charts.")
    async with store.sessionmaker() as session:
        await service.replace(session, store.settings, source.owner, "charts", data)
    found = await listed(store, source, message)
    assert found == await best(store, source, message) and found[0] == "charts"


async def test_a_rare_word_outside_the_kept_sample_is_still_found(store: Store) -> None:
    source, _ = await big_catalog(store)
    message = "a checklist for my zeppelin"
    sample.forget_all()
    first = await listed(store, source, message)
    # Kept counts miss "zeppelin" (the skill is outside the sample): read ahead as in no row,
    # its probe finds it, and the search reads its candidates anew.
    again = await listed(store, source, message)
    assert first == again == await best(store, source, message)
    assert again[0] == "zeppelin-checklist"


async def test_a_selection_that_shrank_into_the_budget_lists_every_skill(store: Store) -> None:
    source = await six_skills(store)
    budget = 50  # 200 characters: at most 3 entries (54 characters at least), and two fit
    before = await turn(store, source, "harbour tides", budget)
    assert before.search  # 6 skills do not fit; their sample's counts are kept
    async with store.sessionmaker() as session:
        for name in ("tides", "avalanche", "knots", "snow"):
            await service.patch(session, source.owner, name, labels=None, enabled=False)
    after = await turn(store, source, "harbour tides", budget)
    assert not after.search
    assert [e.name for e in after.catalog] == ["charts", "maps"]
