"""Search quality over the labelled requests, and the same results from both databases.

The floors are those the labelled set reaches today, a little lowered for headroom: a change to
ranking that loses more fails here. `python -m bench.search_quality` prints the measures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

from backend.auth import service as auth_service
from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.errors import SkillhiveError
from backend.skills.search.engine import search
from backend.skills.search.selection import ReadableSkills
from tests.support import corpus, services
from tests.support.search_eval import (
    QUERIES,
    Quality,
    extra_folders,
    load_queries,
    measure,
    skill_folders,
    upload,
)

THRESHOLD = Settings().skill_search_threshold
INDEPENDENT = QUERIES.with_name("search_queries_independent.yaml")


@asynccontextmanager
async def quality_on(
    url: str, *, use_corpus: bool, queries: Path = QUERIES
) -> AsyncIterator[Quality]:
    engine = create_engine(url)
    try:
        async with create_sessionmaker(engine)() as session:
            user = await auth_service.create_user(session, "quality")
            await session.commit()
            stored = await upload(
                session, Settings(database_url=url), user.id, skill_folders(use_corpus=use_corpus)
            )
            yield await measure(
                session, user.id, load_queries(queries), stored, threshold=THRESHOLD
            )
    finally:
        await engine.dispose()


@contextmanager
def both_databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    template = request.getfixturevalue("sqlite_template")
    admin = request.getfixturevalue("postgres_admin_url")
    with (
        services.sqlite_database(template, tmp_path) as lite,
        services.postgres_database(admin) as pg,
    ):
        yield lite, pg


def test_the_labelled_set_has_answerable_and_no_match_requests_for_every_skill_source() -> None:
    queries = load_queries()
    assert sum(1 for q in queries if q.expect) >= 60
    assert sum(1 for q in queries if not q.expect) >= 15
    assert len({q.text for q in queries}) == len(queries)


def test_the_independent_set_is_labelled_and_shares_no_request_with_the_first() -> None:
    queries = load_queries(INDEPENDENT)
    assert sum(1 for q in queries if q.expect) >= 80
    assert sum(1 for q in queries if not q.expect) >= 25
    assert len({q.text for q in queries}) == len(queries)
    assert not {q.text for q in queries} & {q.text for q in load_queries()}


async def test_the_independent_requests_meet_the_held_out_targets_over_the_corpus(
    database_url: str,
) -> None:
    """Its requests for the repository's skills, and every no-match one, at the targets issue 12
    sets for a held-out set (recall@5 >= 0.65, at most 25 % of no-match requests suggesting a
    skill). Beside the collection it was written for: `python -m bench.search_quality`."""
    corpus.root()  # skips without the corpus (fails under SKILLHIVE_REQUIRE_CORPUS=1)
    async with quality_on(database_url, use_corpus=True, queries=INDEPENDENT) as quality:
        pass
    assert quality.answerable >= 10, quality.summary()
    assert quality.no_match >= 25, quality.summary()
    assert quality.recall_at_5 >= 0.65, quality.summary()
    assert quality.no_match_rate <= 0.25, quality.summary()


def _skill(folder: Path, name: str, description: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\nDo it.\n"
    )


def test_a_sample_of_another_collection_is_the_same_for_the_same_seed(tmp_path: Path) -> None:
    for i in range(12):
        _skill(tmp_path / f"skill-{i:02}", f"skill-{i:02}", "A skill.")
    (tmp_path / "notes").mkdir()  # no SKILL.md: not a skill
    every = extra_folders(tmp_path)
    assert [f.name for _, f in every] == [f"skill-{i:02}" for i in range(12)]
    assert {ns for ns, _ in every} == {"extra"}
    picked = extra_folders(tmp_path, sample=5, seed=7)
    assert len(picked) == 5 and set(picked) < set(every)
    assert picked == extra_folders(tmp_path, sample=5, seed=7)
    assert extra_folders(tmp_path, sample=50, seed=7) == every


async def test_another_collection_uploads_what_the_upload_accepts_and_notes_the_rest(
    database_url: str, tmp_path: Path
) -> None:
    _skill(tmp_path / "good", "tide-tables", "Reads tide tables for sailors.")
    _skill(tmp_path / "shouting", "Tide Tables", "Not lowercase, which the format refuses.")
    _skill(tmp_path / "other", "moon-phases", "Tells the phase of the moon.")
    settings = Settings(database_url=database_url)
    engine = create_engine(database_url)
    try:
        async with create_sessionmaker(engine)() as session:
            user = await auth_service.create_user(session, "quality")
            await session.commit()
            user_id = user.id
            rejected: list[tuple[str, str]] = []
            stored = await upload(
                session, settings, user_id, extra_folders(tmp_path), rejected=rejected
            )
            hits = await search(
                session, ReadableSkills(user_id), "tide tables", limit=5, threshold=0
            )
            with pytest.raises(SkillhiveError) as refused:
                await upload(session, settings, user_id, [("extra", tmp_path / "shouting")])
    finally:
        await engine.dispose()
    assert stored == {"tide-tables", "moon-phases"}
    assert rejected == [("shouting", "invalid_name")]
    assert [h.name for h in hits] == ["tide-tables"]
    assert refused.value.code == "invalid_name"  # without `rejected`: raises


async def test_search_over_the_fixture_skills_meets_its_floors(database_url: str) -> None:
    async with quality_on(database_url, use_corpus=False) as quality:
        pass
    assert quality.answerable >= 12, quality.summary()
    assert quality.recall_at_5 >= 0.7, quality.summary()
    assert quality.mrr >= 0.6, quality.summary()
    assert quality.no_match_rate <= 0.15, quality.summary()


async def test_search_over_the_corpus_meets_its_floors_on_both_databases_alike(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    corpus.root()  # skips without the corpus (fails under SKILLHIVE_REQUIRE_CORPUS=1)
    with both_databases(request, tmp_path) as (lite, pg):
        async with quality_on(lite, use_corpus=True) as on_sqlite:
            pass
        async with quality_on(pg, use_corpus=True) as on_postgres:
            pass
    assert on_sqlite.results == on_postgres.results
    assert on_sqlite.answerable >= 60, on_sqlite.summary()
    assert on_sqlite.recall_at_1 >= 0.75, on_sqlite.summary()
    assert on_sqlite.recall_at_5 >= 0.85, on_sqlite.summary()
    assert on_sqlite.mrr >= 0.8, on_sqlite.summary()
    assert on_sqlite.no_match_rate <= 0.2, on_sqlite.summary()


async def test_both_databases_return_the_same_results_for_every_labelled_request(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with both_databases(request, tmp_path) as (lite, pg):
        async with quality_on(lite, use_corpus=False) as on_sqlite:
            pass
        async with quality_on(pg, use_corpus=False) as on_postgres:
            pass
    assert on_sqlite.results and on_sqlite.results == on_postgres.results
