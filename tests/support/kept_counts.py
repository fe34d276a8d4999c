"""Searching a store and looking at the counts a process keeps for a selection (sample.py):
the tests of kept samples and of generations share them."""

from __future__ import annotations

from backend.crd.ghost import GhostSpec
from backend.kinds.store import Scope
from backend.skills.search import sample
from backend.skills.search.condition import where_sql
from backend.skills.search.engine import CountsQuery, request_stems, search
from backend.skills.search.sample import SampleWords
from backend.skills.search.selection import GhostSkills, SkillSource
from backend.skills.search.text import query_terms
from tests.support.skill_store import Store

Hits = list[tuple[str, float]]


async def hits(store: Store, source: SkillSource, query: str) -> Hits:
    async with store.sessionmaker() as session:
        found = await search(session, source, query, limit=10, threshold=0.0)
    return [(h.name, h.score) for h in found]


async def fresh(store: Store, source: SkillSource, query: str) -> Hits:
    """What a process that kept no counts answers."""
    sample.forget_all()
    return await hits(store, source, query)


async def counts_query(store: Store, source: SkillSource, query: str) -> CountsQuery:
    """The `CountsQuery` a search for `query` over `source` starts from in this process."""
    async with store.sessionmaker() as session:
        dialect = session.get_bind().dialect.name
        stems = request_stems(query_terms(query))
        return CountsQuery.of(dialect, where_sql(session, source), stems)


async def kept(store: Store, source: SkillSource) -> SampleWords | None:
    return (await counts_query(store, source, "")).known


def everything(scope: Scope) -> GhostSkills:
    return GhostSkills.from_spec(scope, GhostSpec.model_validate({"skillSelector": {}}))
