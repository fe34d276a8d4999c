"""The search index follows every skill write in the same transaction, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from backend.db.engine import sync_url
from backend.db.migrate import upgrade
from backend.db.models import SkillLabel, SkillSearch
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.search.engine import search
from backend.skills.search.selection import ReadableSkills
from tests.support import services, zips
from tests.support.skill_store import Store


async def names(store: Store, user: int, query: str) -> list[str]:
    async with store.sessionmaker() as session:
        hits = await search(session, ReadableSkills(user), query, limit=10, threshold=0.0)
    return [h.name for h in hits]


async def engine_rows(store: Store) -> int:
    """Rows the full-text engine itself holds (FTS5 table or non-empty tsvectors)."""
    async with store.sessionmaker() as session:
        if session.get_bind().dialect.name == "postgresql":
            sql = "SELECT count(*) FROM skill_search WHERE length(document) > 0"
        else:
            sql = "SELECT count(*) FROM skill_search_fts_docsize"
        return int((await session.execute(text(sql))).scalar_one())


async def test_a_new_skill_is_searchable_at_once(store: Store) -> None:
    alice = await store.user("alice")
    await store.skill(Scope(alice, "dev"), "tides", "Predict the tides of a harbour.")
    assert await names(store, alice, "when is high tide") == ["tides"]
    assert await engine_rows(store) == 1


async def test_replacing_a_skill_reindexes_its_new_text(store: Store) -> None:
    alice = await store.user("alice")
    scope = Scope(alice, "dev")
    await store.skill(scope, "tides", "Predict the tides of a harbour.")
    data = zips.skill("tides", description="Forecast avalanche danger on a slope.")
    async with store.sessionmaker() as session:
        await service.replace(session, store.settings, scope, "tides", data)
    assert await names(store, alice, "harbour") == []
    assert await names(store, alice, "avalanche forecast") == ["tides"]
    assert await engine_rows(store) == 1


async def test_patching_labels_and_enabled_updates_the_index(store: Store) -> None:
    alice = await store.user("alice")
    scope = Scope(alice, "dev")
    await store.skill(scope, "tides", "Predict the tides.", labels={"team": "sea"})
    async with store.sessionmaker() as session:
        await service.patch(session, scope, "tides", labels={"team": "land"}, enabled=False)
        row = await session.scalar(select(SkillSearch).where(SkillSearch.name == "tides"))
        labels = (await session.execute(select(SkillLabel.key, SkillLabel.value))).all()
    assert row is not None and row.enabled is False
    assert labels == [("team", "land")]


async def test_deleting_a_skill_removes_it_from_every_index(store: Store) -> None:
    alice = await store.user("alice")
    scope = Scope(alice, "dev")
    await store.skill(scope, "tides", "Predict the tides.", labels={"team": "sea"})
    await store.skill(scope, "waves", "Predict the waves.")
    async with store.sessionmaker() as session:
        await service.delete(session, scope, "tides")
        left = await session.scalar(select(func.count()).select_from(SkillSearch))
        labels = await session.scalar(select(func.count()).select_from(SkillLabel))
    assert (left, labels) == (1, 0)
    assert await engine_rows(store) == 1
    assert await names(store, alice, "predict tides") == ["waves"]


async def test_a_refused_write_leaves_the_index_as_it_was(store: Store) -> None:
    alice = await store.user("alice")
    scope = Scope(alice, "dev")
    await store.skill(scope, "tides", "Predict the tides.")
    with pytest.raises(Exception):  # noqa: B017 - the name is taken: 409
        await store.skill(scope, "tides", "Something else entirely about volcanoes.")
    assert await names(store, alice, "volcanoes") == []
    assert await engine_rows(store) == 1


def test_the_migration_indexes_skills_stored_before_it(
    db_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if db_backend == "postgresql":
        context = services.postgres_database(
            request.getfixturevalue("postgres_admin_url"), migrated=False
        )
    else:
        context = services.sqlite_database(None, tmp_path)
    with context as url:
        upgrade(url, "0002")
        crd = (
            '{"metadata": {"name": "tides", "labels": {"team": "sea"}}, "spec": '
            '{"description": "Predict the tides of a harbour.", "prompt": "Look up the moon."},'
            ' "status": {"sha256": "ab", "enabled": true}}'
        )
        engine = create_engine(sync_url(url))
        try:
            with engine.begin() as conn:
                conn.execute(
                    text(
                        "INSERT INTO kinds (id, user_id, kind, namespace, name, json, is_active,"
                        " resource_version, created_at, updated_at) VALUES (7, 0, 'Skill',"
                        " 'default', 'tides', :crd, true, 1, CURRENT_TIMESTAMP,"
                        " CURRENT_TIMESTAMP)"
                    ),
                    {"crd": crd},
                )
            upgrade(url)
            with engine.connect() as conn:
                row = conn.execute(
                    text("SELECT name, desc_terms, body_terms FROM skill_search WHERE kind_id = 7")
                ).one()
                label = conn.execute(text("SELECT key, value FROM skill_labels")).one()
        finally:
            engine.dispose()
    assert row == ("tides", "predict tide harbour", "look moon")
    assert tuple(label) == ("team", "sea")
