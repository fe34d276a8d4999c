"""Active-skill bookkeeping: retention, LRU eviction within the budget, pinned preloads."""

from __future__ import annotations

from chat_shell.contracts import LoadedSkill
from chat_shell.skills.active import ActiveSkills

COSTS = {"a": 100, "b": 100, "c": 100, "pin": 100}


def names(records: list[LoadedSkill]) -> list[str]:
    return [r.name for r in records]


def test_restore_keeps_skills_used_within_retention_and_known_names_only() -> None:
    records = [
        LoadedSkill(name="a", last_used_turn=2),
        LoadedSkill(name="b", last_used_turn=5),
        LoadedSkill(name="gone", last_used_turn=7),
    ]

    active = ActiveSkills.restore(records, costs=COSTS, budget=1000, turn=7, retention=2)

    assert active.names() == ["b"] and "a" not in active and "gone" not in active
    assert active.records() == [LoadedSkill(name="b", last_used_turn=5)]


def test_load_evicts_least_recently_used_first_and_never_the_new_one() -> None:
    active = ActiveSkills(COSTS, budget=250, turn=0)
    active.load("a")
    active.load("b")
    active.touch("a")

    evicted = active.load("c")

    assert evicted == ["b"] and names(active.records()) == ["a", "c"]
    assert active.names() == ["a", "c"]  # prompt order: order of entry, not of use


def test_pinned_skills_are_active_and_never_evicted() -> None:
    active = ActiveSkills.restore(
        [], costs=COSTS, budget=150, turn=3, retention=5, pinned=["pin", "unknown"]
    )

    assert active.load("a") == []  # over budget, but the only candidate is the new one
    assert names(active.records()) == ["pin", "a"]
    assert active.is_pinned("pin") and active.total_cost() == 200


def test_restore_applies_the_budget_oldest_first() -> None:
    records = [LoadedSkill(name=n, last_used_turn=4) for n in ("a", "b", "c")]

    active = ActiveSkills.restore(records, costs=COSTS, budget=200, turn=4, retention=1)

    assert active.names() == ["b", "c"]


def test_touch_moves_a_skill_to_most_recent_and_updates_its_turn() -> None:
    active = ActiveSkills.restore(
        [LoadedSkill(name="a", last_used_turn=1), LoadedSkill(name="b", last_used_turn=2)],
        costs=COSTS,
        budget=1000,
        turn=3,
        retention=5,
    )

    active.touch("a")
    active.touch("never-loaded")

    assert active.records() == [
        LoadedSkill(name="b", last_used_turn=2),
        LoadedSkill(name="a", last_used_turn=3),
    ]
