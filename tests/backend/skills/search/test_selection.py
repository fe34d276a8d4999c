"""Which skills a Ghost searches: listed, selected by label, public; never another user's."""

from __future__ import annotations

from typing import Any

from backend.crd.ghost import GhostSpec
from backend.ghosts import PUBLIC_GHOSTS
from backend.kinds.store import Scope
from backend.skills.search.engine import search
from backend.skills.search.selection import GhostSkills, ReadableSkills, SkillSource
from tests.support.skill_store import Store

QUERY = "make a chart of the numbers"


def ghost(**spec: Any) -> GhostSpec:
    return GhostSpec.model_validate(spec)


async def found(store: Store, source: SkillSource, query: str = QUERY) -> list[tuple[str, str]]:
    async with store.sessionmaker() as session:
        hits = await search(session, source, query, limit=50, threshold=0.0)
    return sorted((h.namespace, h.name) for h in hits)


async def charts(store: Store) -> tuple[int, int]:
    """alice and bob, each with chart skills labelled by team, and public chart skills."""
    alice, bob = await store.user("alice"), await store.user("bob")
    chart = "Draw a chart of numbers."
    await store.skill(Scope(alice, "dev"), "bars", chart, labels={"team": "data", "tier": "1"})
    await store.skill(Scope(alice, "dev"), "pies", chart, labels={"team": "ops"})
    await store.skill(Scope(alice, "dev"), "lines", chart)
    await store.skill(Scope(alice, "prod"), "areas", chart, labels={"team": "data"})
    await store.skill(Scope(bob, "dev"), "bobs-bars", chart, labels={"team": "data"})
    await store.public_skill("public-bars", chart, labels={"team": "data"})
    await store.public_skill("public-pies", chart)
    await store.public_skill("lines", "Draw a chart of numbers, the public way.")
    return alice, bob


async def test_a_ghost_without_list_selector_or_public_skills_searches_nothing(
    store: Store,
) -> None:
    alice, _ = await charts(store)
    assert await found(store, GhostSkills.from_spec(Scope(alice, "dev"), ghost())) == []


async def test_listed_skills_resolve_own_first_then_public(store: Store) -> None:
    alice, _ = await charts(store)
    source = GhostSkills.from_spec(
        Scope(alice, "dev"), ghost(skills=["lines", "public-pies", "bobs-bars"])
    )
    assert await found(store, source) == [("dev", "lines"), ("public", "public-pies")]


async def test_match_labels_select_own_skills_of_the_ghosts_namespace_only(store: Store) -> None:
    alice, _ = await charts(store)
    source = GhostSkills.from_spec(
        Scope(alice, "dev"), ghost(skillSelector={"matchLabels": {"team": "data"}})
    )
    assert await found(store, source) == [("dev", "bars")]


async def test_an_empty_selector_selects_every_own_skill_of_the_namespace(store: Store) -> None:
    alice, _ = await charts(store)
    source = GhostSkills.from_spec(Scope(alice, "dev"), ghost(skillSelector={}))
    assert await found(store, source) == [("dev", "bars"), ("dev", "lines"), ("dev", "pies")]


async def test_match_expressions_follow_kubernetes_semantics(store: Store) -> None:
    alice, _ = await charts(store)

    async def select(*expressions: dict[str, Any]) -> list[str]:
        spec = ghost(skillSelector={"matchExpressions": list(expressions)})
        return [n for _, n in await found(store, GhostSkills.from_spec(Scope(alice, "dev"), spec))]

    assert await select({"key": "team", "operator": "In", "values": ["ops", "x"]}) == ["pies"]
    # NotIn also matches skills without the key.
    assert await select({"key": "team", "operator": "NotIn", "values": ["ops"]}) == [
        "bars",
        "lines",
    ]
    assert await select({"key": "tier", "operator": "Exists"}) == ["bars"]
    assert await select({"key": "team", "operator": "DoesNotExist"}) == ["lines"]
    assert await select(
        {"key": "team", "operator": "Exists"}, {"key": "tier", "operator": "DoesNotExist"}
    ) == ["pies"]


async def test_include_public_skills_adds_public_ones_and_own_skills_shadow_them(
    store: Store,
) -> None:
    alice, _ = await charts(store)
    everything = GhostSkills.from_spec(Scope(alice, "dev"), ghost(includePublicSkills=True))
    # The public `lines` is shadowed by alice's own `lines` in dev (which nothing selected).
    assert await found(store, everything) == [("public", "public-bars"), ("public", "public-pies")]
    by_label = GhostSkills.from_spec(
        Scope(alice, "dev"),
        ghost(includePublicSkills=True, skillSelector={"matchLabels": {"team": "data"}}),
    )
    assert await found(store, by_label) == [("dev", "bars"), ("public", "public-bars")]


async def test_a_public_ghost_sees_public_skills_only(store: Store) -> None:
    await charts(store)
    source = GhostSkills.from_spec(
        PUBLIC_GHOSTS, ghost(skills=["bars", "public-pies"], skillSelector={})
    )
    assert await found(store, source) == [
        ("public", "lines"),
        ("public", "public-bars"),
        ("public", "public-pies"),
    ]


async def test_disabled_skills_and_skills_for_other_shells_are_not_a_ghosts(store: Store) -> None:
    alice = await store.user("alice")
    scope = Scope(alice, "dev")
    await store.skill(scope, "on", "Draw a chart of numbers.")
    await store.skill(scope, "off", "Draw a chart of numbers.", enabled=False)
    await store.skill(scope, "code", "Draw a chart of numbers.", extra="bindShells: [ClaudeCode]\n")
    await store.skill(scope, "both", "Draw a chart of numbers.", extra="bindShells: [Chat, X]\n")
    source = GhostSkills.from_spec(scope, ghost(skillSelector={}, skills=["off", "code"]))
    assert await found(store, source) == [("dev", "both"), ("dev", "on")]
    # Searching everything one can read still finds them: it is not what an agent can load.
    assert len(await found(store, ReadableSkills(alice))) == 4


async def test_reading_search_covers_own_namespaces_and_public_never_other_users(
    store: Store,
) -> None:
    alice, bob = await charts(store)
    assert await found(store, ReadableSkills(bob)) == [
        ("dev", "bobs-bars"),
        ("public", "lines"),
        ("public", "public-bars"),
        ("public", "public-pies"),
    ]
    assert ("prod", "areas") in await found(store, ReadableSkills(alice))
    assert not any(n == "bobs-bars" for _, n in await found(store, ReadableSkills(alice)))
