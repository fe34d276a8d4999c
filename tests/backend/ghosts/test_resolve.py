"""resolve_ghost / resolve_skills: what the chat builder gets for a reference and skill names."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Integer, String, literal, select

from backend.crd.ghost import GHOST_KIND, Ghost
from backend.errors import InvalidRequest, NotFound
from backend.ghosts import PUBLIC_GHOSTS
from backend.ghosts.resolve import (
    _GHOST_TEXT,
    GhostCache,
    ResolvedGhost,
    ghost_text_of,
    parse_ref,
    resolve_ghost,
    resolve_skills,
)
from backend.kinds import store
from backend.kinds.store import Scope
from tests.support.accounts import Account
from tests.support.ghosts import PUBLIC, add_skill, create, ghost, own

PUBLIC_SKILLS = "/api/v1/public/skills"


async def test_a_reference_resolves_to_the_callers_own_or_a_public_ghost(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, bob: Account, admin: Account
) -> None:
    assert (await create(client, alice.headers, ghost("mine"))).status_code == 201
    assert (await create(client, admin.headers, ghost("shared"), base=PUBLIC)).status_code == 201
    async with app.state.sessionmaker() as session:
        mine = await resolve_ghost(session, alice.id, "dev/mine")
        assert mine.owner == Scope(alice.id, "dev") and not mine.public
        assert mine.crd.metadata.name == "mine" and mine.spec.system_prompt == "You help."
        shared = await resolve_ghost(session, bob.id, "public/shared")
        assert shared.owner == PUBLIC_GHOSTS and shared.crd.metadata.namespace == "public"
        assert shared.public
        for user_id, ref in ((bob.id, "dev/mine"), (alice.id, "dev/none"), (alice.id, "public/x")):
            with pytest.raises(NotFound) as missing:
                await resolve_ghost(session, user_id, ref)
            assert missing.value.code == "ghost_not_found"
            namespace, _, name = ref.partition("/")
            assert f"{name!r}" in missing.value.message and namespace in missing.value.message


@pytest.mark.parametrize("ref", ["", "mine", "dev/", "/mine", "dev/mine/x", "Dev/mine", "dev/a b"])
async def test_a_malformed_reference_is_refused(app: FastAPI, alice: Account, ref: str) -> None:
    async with app.state.sessionmaker() as session:
        with pytest.raises(InvalidRequest) as refused:
            await resolve_ghost(session, alice.id, ref)
    assert refused.value.code == "invalid_ghost_ref"


async def test_skills_resolve_own_first_then_public_in_the_order_given(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, bob: Account, admin: Account
) -> None:
    for name in ("both", "public-only"):
        await add_skill(client, admin.headers, name, base=PUBLIC_SKILLS)
    for name in ("both", "own-only"):
        await add_skill(client, alice.headers, name)
    await add_skill(client, bob.headers, "bobs")
    names = ["public-only", "both", "missing", "own-only", "bobs", "both"]
    async with app.state.sessionmaker() as session:
        own = await resolve_skills(session, Scope(alice.id, "dev"), names)
        elsewhere = await resolve_skills(session, Scope(alice.id, "prod"), names)
        public = await resolve_skills(session, PUBLIC_GHOSTS, names)
    assert [(s.metadata.name, s.status.public) for s in own] == [
        ("public-only", True),
        ("both", False),
        ("own-only", False),
    ]
    assert [(s.metadata.name, s.status.public) for s in elsewhere] == [
        ("public-only", True),
        ("both", True),
    ]
    assert [s.metadata.name for s in public] == ["public-only", "both"]
    assert all(s.status.public for s in public)


async def test_the_ghost_cache_answers_like_resolve_ghost_and_sees_every_new_version(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    assert (await create(client, alice.headers, ghost("mine"))).status_code == 201
    cache = GhostCache()
    async with app.state.engine.connect() as connection:
        first = await cache.resolve(connection, alice.id, "dev/mine")
        again = await cache.resolve(connection, alice.id, "dev/mine")
    async with app.state.sessionmaker() as session:
        assert first == await resolve_ghost(session, alice.id, "dev/mine")
    assert again is first  # validated once while the stored version stays
    changed = ghost("mine", systemPrompt="You help differently.")
    replaced = await client.put(f"{own()}/mine", json=changed, headers=alice.headers)
    assert replaced.status_code == 200, replaced.text
    async with app.state.engine.connect() as connection:
        updated = await cache.resolve(connection, alice.id, "dev/mine")
        assert updated.spec.system_prompt == "You help differently."
        # Another user's reference with the same text is not the cached Ghost: 404.
        with pytest.raises(NotFound) as missing:
            await cache.resolve(connection, bob.id, "dev/mine")
    assert missing.value.code == "ghost_not_found"


async def test_the_ghost_cache_keeps_at_most_its_characters_of_json(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    prompt = "p" * 20_000
    for name in ("one", "two", "three"):
        body = ghost(name, systemPrompt=prompt)
        assert (await create(client, alice.headers, body)).status_code == 201
    cache = GhostCache(max_chars=50_000)  # room for two of these Ghosts, not three
    async with app.state.engine.connect() as connection:
        first = await cache.resolve(connection, alice.id, "dev/one")
        await cache.resolve(connection, alice.id, "dev/two")
        assert len(cache) == 2
        await cache.resolve(connection, alice.id, "dev/three")
        assert len(cache) == 2  # the least recently used, "one", went out
        assert await cache.resolve(connection, alice.id, "dev/one") is not first


async def test_the_ghost_text_read_in_sql_is_the_row_parse_ref_names(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, bob: Account, admin: Account
) -> None:
    """A turn reads its Ghost's JSON inside its window's statement (`ghost_text_of`): for every
    reference it finds the row `parse_ref` + `_GHOST_TEXT` find, and nothing where they refuse."""
    assert (await create(client, alice.headers, ghost("mine"))).status_code == 201
    assert (await create(client, bob.headers, ghost("mine"))).status_code == 201
    assert (await create(client, admin.headers, ghost("shared"), base=PUBLIC)).status_code == 201
    cases = [
        (alice.id, "dev/mine"),
        (bob.id, "dev/mine"),
        (bob.id, "public/shared"),
        (alice.id, "public/mine"),
        (alice.id, "prod/mine"),
        (alice.id, "dev/none"),
        (alice.id, "mine"),
        (alice.id, "/mine"),
        (alice.id, "dev/"),
        (alice.id, "dev/mine/x"),
        (alice.id, ""),
    ]
    found = []
    async with app.state.engine.connect() as connection:
        for user_id, ref in cases:
            in_sql = await connection.scalar(
                select(ghost_text_of(literal(ref, String), literal(user_id, Integer)))
            )
            try:
                scope, name = parse_ref(user_id, ref)
            except InvalidRequest:
                expected = None
            else:
                params = store.get_params(GHOST_KIND, scope, name)
                expected = await connection.scalar(_GHOST_TEXT, params)
            assert in_sql == expected, ref
            found.append(in_sql is not None)
    assert found[:3] == [True, True, True] and not any(found[3:])
    async with app.state.engine.connect() as connection:
        mine = await connection.scalar(
            select(ghost_text_of(literal("dev/mine", String), literal(alice.id, Integer)))
        )
        theirs = await connection.scalar(
            select(ghost_text_of(literal("dev/mine", String), literal(bob.id, Integer)))
        )
    assert mine != theirs  # each user's own Ghost, not the other's of the same name


def test_a_resolved_ghost_takes_its_pins_once() -> None:
    body = ghost("pinned", skills=["a@3", "b"], preloadSkills=["a@3"])
    resolved = ResolvedGhost.of(Ghost.model_validate(body), Scope(1, "dev"))

    assert resolved.pins == {"a": 3}
    bare = resolved.unpinned
    assert bare.spec.skills == ["a", "b"] and bare.spec.preload_skills == ["a"]
    assert bare.pins == {} and resolved.spec.skills == ["a@3", "b"]  # the stored one unchanged
    # Once per stored Ghost (GhostCache keeps `resolved`), not once per turn.
    assert resolved.unpinned is bare and resolved.pins is resolved.pins
