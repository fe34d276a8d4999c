"""Semantic re-ranking through a scripted embeddings endpoint on loopback (both databases).

The lexical search decides what may be suggested; the endpoint only orders its best matches,
embeds only those (once per text), and when it fails the lexical ranking stands.
"""

from __future__ import annotations

import logging

import pytest

from backend.config import Settings
from backend.kinds.store import Scope
from backend.skills.search.engine import SearchHit, search
from backend.skills.search.selection import ReadableSkills
from backend.skills.search.semantic import SemanticRanker, ranker_for
from tests.support.embeddings import EmbeddingsServer
from tests.support.listener import Listener
from tests.support.skill_store import Store

QUERY = "draw me charts of the sea"
THRESHOLD = 0.2  # four skills: every word is common, scores are low
# The scripted model "knows" these words mean tides.
SYNONYMS = {"ocean": "tides", "water": "tides", "levels": "tides", "sea": "tides"}


def ranker(url: str, *, candidates: int = 2, allow: bool = True) -> SemanticRanker:
    settings = Settings(
        embeddings_url=url,
        embeddings_api_key="k-123",
        embeddings_candidates=candidates,
        embeddings_timeout_s=2,
        egress_allow=["127.0.0.1"] if allow else [],
    )
    found = ranker_for(settings)
    assert found is not None
    return found


async def skills(store: Store) -> int:
    alice = await store.user("alice")
    dev = Scope(alice, "dev")
    await store.skill(dev, "bars", "Draw bar charts of numbers for reports.")
    await store.skill(dev, "pies", "Draw pie charts of shares for slides.")
    await store.skill(dev, "tides", "Draw charts of the tides for sailors.")
    await store.skill(dev, "poems", "Write short poems about autumn.")
    return alice


async def run(
    store: Store, user: int, query: str, rerank: SemanticRanker | None, limit: int = 5
) -> list[SearchHit]:
    async with store.sessionmaker() as session:
        return await search(
            session, ReadableSkills(user), query, limit=limit, threshold=THRESHOLD, rerank=rerank
        )


def names(hits: list[SearchHit]) -> list[str]:
    return [h.name for h in hits]


def test_no_endpoint_configured_means_no_ranker() -> None:
    assert ranker_for(Settings()) is None


async def test_the_best_lexical_matches_are_ordered_by_meaning(store: Store) -> None:
    user = await skills(store)
    lexical = await run(store, user, QUERY, None)
    assert names(lexical)[:1] != ["tides"]  # the words alone do not find it first
    with EmbeddingsServer(SYNONYMS) as server:
        rerank = ranker(server.url, candidates=3)
        hits = await run(store, user, QUERY, rerank)
    assert set(names(hits)) == set(names(lexical))  # the lexical search chose what may come
    assert names(hits)[0] == "tides"
    assert all(0 < h.score <= 1 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert server.authorizations[-1] == "Bearer k-123"


async def test_only_the_top_candidates_are_embedded_and_each_text_once(store: Store) -> None:
    user = await skills(store)
    lexical = await run(store, user, QUERY, None)
    assert len(lexical) == 3
    with EmbeddingsServer(SYNONYMS) as server:
        rerank = ranker(server.url, candidates=2)
        first = await run(store, user, QUERY, rerank, limit=1)
        # The request and the two best lexical matches (of three)
        assert server.inputs == [QUERY, *(f"{h.name}: {h.description}" for h in lexical[:2])]
        assert len(first) == 1
        await run(store, user, "draw charts of the sea", rerank, limit=1)
    assert server.inputs[3:] == ["draw charts of the sea"]  # the skills' texts were cached
    assert rerank.embedded == 4


async def test_small_talk_asks_nothing_of_the_endpoint(store: Store) -> None:
    user = await skills(store)
    with EmbeddingsServer(SYNONYMS) as server:
        assert await run(store, user, "hi, how are you?", ranker(server.url)) == []
    assert server.inputs == []


@pytest.mark.parametrize("failure", ["status", "malformed", "wrong_count"])
async def test_a_failing_endpoint_leaves_the_lexical_ranking_with_a_warning(
    store: Store, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    user = await skills(store)
    lexical = await run(store, user, QUERY, None)
    with EmbeddingsServer(SYNONYMS) as server:
        if failure == "status":
            server.status = 503
        elif failure == "malformed":
            server.body = b"not json"
        else:
            server.body = b'{"data": [{"index": 0, "embedding": [1.0]}]}'
        with caplog.at_level(logging.WARNING, logger="skillhive.search"):
            hits = await run(store, user, QUERY, ranker(server.url, candidates=3))
    assert server.inputs  # it was asked
    assert hits == lexical
    assert any("lexical ranking stands" in r.getMessage() for r in caplog.records)


async def test_an_unreachable_endpoint_leaves_the_lexical_ranking(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    user = await skills(store)
    lexical = await run(store, user, QUERY, None)
    async with Listener() as listener:  # find a free port, then close it
        url = listener.url("/v1")
    with caplog.at_level(logging.WARNING, logger="skillhive.search"):
        assert await run(store, user, QUERY, ranker(url)) == lexical
    assert any("lexical ranking stands" in r.getMessage() for r in caplog.records)


async def test_the_default_egress_policy_keeps_a_loopback_endpoint_out(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    user = await skills(store)
    lexical = await run(store, user, QUERY, None)
    with EmbeddingsServer(SYNONYMS) as server:
        with caplog.at_level(logging.WARNING, logger="skillhive.search"):
            hits = await run(store, user, QUERY, ranker(server.url, allow=False))
    assert server.inputs == []  # nothing reached it
    assert hits == lexical
    assert any("EgressForbidden" in r.getMessage() for r in caplog.records)
