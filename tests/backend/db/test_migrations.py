"""Alembic upgrades an empty database to head on both backends, matching the models exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from backend.db.engine import sync_url
from backend.db.migrate import alembic_config, schema_differences, upgrade
from backend.db.models import SYSTEM_USER_ID
from backend.skills.package import read_package
from backend.skills.search.index import index_values
from tests.support import services, zips


@pytest.fixture
def empty_database(
    db_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[str]:
    if db_backend == "postgresql":
        admin_url = request.getfixturevalue("postgres_admin_url")
        with services.postgres_database(admin_url, migrated=False) as url:
            yield url
    else:
        with services.sqlite_database(None, tmp_path) as url:
            yield url


def _scalar(url: str, sql: str) -> object:
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            return conn.execute(text(sql)).scalar()
    finally:
        engine.dispose()


def test_empty_database_upgrades_to_head_without_drift(empty_database: str) -> None:
    assert schema_differences(empty_database)  # an empty database differs from the models
    upgrade(empty_database)
    assert schema_differences(empty_database) == []
    head = ScriptDirectory.from_config(alembic_config(empty_database)).get_current_head()
    assert _scalar(empty_database, "SELECT version_num FROM alembic_version") == head


def test_upgrade_is_idempotent_and_seeds_the_system_user(empty_database: str) -> None:
    upgrade(empty_database)
    upgrade(empty_database)
    assert (
        _scalar(empty_database, f"SELECT name FROM users WHERE id = {SYSTEM_USER_ID}") == "system"
    )
    assert _scalar(empty_database, "SELECT count(*) FROM users") == 1


def test_skill_versions_cascade_with_their_kind_and_keep_their_blob(empty_database: str) -> None:
    upgrade(empty_database)
    engine = create_engine(sync_url(empty_database))
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "sqlite":
                conn.execute(text("PRAGMA foreign_keys=ON"))
            conn.execute(
                text(
                    "INSERT INTO kinds (id, user_id, kind, namespace, name, json, is_active,"
                    " resource_version, created_at, updated_at) VALUES (1, 0, 'Skill', 'default',"
                    " 'x', '{}', true, 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO skill_blobs (sha256, data, size, created_at)"
                    " VALUES ('h', :b, 1, CURRENT_TIMESTAMP)"
                ),
                {"b": b"x"},
            )
            conn.execute(
                text(
                    "INSERT INTO skill_versions (kind_id, number, sha256, size, crd, created_at,"
                    " source) VALUES (1, 1, 'h', 1, '{}', CURRENT_TIMESTAMP, '{}')"
                )
            )
            conn.execute(text("DELETE FROM kinds WHERE id = 1"))
            assert conn.execute(text("SELECT count(*) FROM skill_versions")).scalar() == 0
            assert conn.execute(text("SELECT count(*) FROM skill_blobs")).scalar() == 1
    finally:
        engine.dispose()


def stored_skill_json(name: str) -> str:
    """A Skill CRD as the API stores it (later migrations index the stored rows)."""
    crd = read_package(zips.skill(name)).to_crd()
    return json.dumps(crd.model_dump(mode="json", by_alias=True, exclude_none=True))


def test_existing_packages_become_version_one_with_one_blob_per_hash(empty_database: str) -> None:
    upgrade(empty_database, "0002")
    engine = create_engine(sync_url(empty_database))
    try:
        with engine.begin() as conn:
            for kind_id, name in ((1, "a"), (2, "b")):
                conn.execute(
                    text(
                        "INSERT INTO kinds (id, user_id, kind, namespace, name, json, is_active,"
                        " resource_version, created_at, updated_at) VALUES (:id, 0, 'Skill',"
                        " 'default', :name, :json, true, 1, CURRENT_TIMESTAMP,"
                        " CURRENT_TIMESTAMP)"
                    ),
                    {"id": kind_id, "name": name, "json": stored_skill_json(name)},
                )
                conn.execute(
                    text(
                        "INSERT INTO skill_binaries (kind_id, binary_data, file_size, file_hash,"
                        " created_at) VALUES (:id, :b, 4, 'same', CURRENT_TIMESTAMP)"
                    ),
                    {"id": kind_id, "b": b"same"},
                )
        upgrade(empty_database)
        with engine.connect() as conn:
            versions = conn.execute(
                text("SELECT kind_id, number, sha256 FROM skill_versions ORDER BY kind_id")
            ).all()
            assert [tuple(v) for v in versions] == [(1, 1, "same"), (2, 1, "same")]
            assert conn.execute(text("SELECT data FROM skill_blobs")).scalars().all() == [b"same"]
    finally:
        engine.dispose()
    assert schema_differences(empty_database) == []


def test_terms_indexed_with_a_combining_dot_are_indexed_again(empty_database: str) -> None:
    # Before 0010, "İstanbul" was indexed as "i" + U+0307 + "stanbul", which no request matches.
    upgrade(empty_database, "0009_skill_generations")
    crd = read_package(zips.skill("ferry", description="Ferries of İstanbul.")).to_crd()
    stored = json.dumps(crd.model_dump(mode="json", by_alias=True, exclude_none=True))
    values = index_values(1, SYSTEM_USER_ID, "default", json.loads(stored))
    values["desc_terms"] = values["desc_terms"].replace("istanbul", "i\u0307stanbul")
    columns = [c for c in values if c != "revision"] + ["revision"]
    engine = create_engine(sync_url(empty_database))
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO kinds (id, user_id, kind, namespace, name, json, is_active,"
                    " resource_version, created_at, updated_at) VALUES (1, 0, 'Skill',"
                    " 'default', 'ferry', :json, true, 1, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                ),
                {"json": stored},
            )
            conn.execute(
                text(
                    f"INSERT INTO skill_search ({', '.join(columns)}) "
                    f"VALUES ({', '.join(':' + c for c in columns)})"
                ),
                values,
            )
        upgrade(empty_database)
        with engine.connect() as conn:
            terms = conn.execute(text("SELECT desc_terms FROM skill_search")).scalar_one()
    finally:
        engine.dispose()
    assert terms.split() == ["ferri", "istanbul"]
