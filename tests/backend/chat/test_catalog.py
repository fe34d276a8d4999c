"""What a turn reads of a Ghost's skills: catalog fields, and in full only those it starts with."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from backend.chat.catalog import SkillSpecCache, turn_skills
from backend.crd.ghost import GhostSpec
from backend.kinds.store import Scope
from backend.skills.search.selection import GhostSkills
from tests.support import zips
from tests.support.accounts import Account
from tests.support.skills import upload

SKILLS = {
    "tides": "Predict the tides of a harbour.",
    "avalanche": "Rate avalanche danger on a snowy slope.",
    "charts": "Draw charts of numbers.",
    "vault": "Open the vault.",
}


async def skills(client: httpx.AsyncClient, alice: Account) -> None:
    for name, description in SKILLS.items():
        extra = ""
        if name == "vault":
            extra = (
                "mcpServers:\n  safe:\n    url: https://vault.example/mcp\n"
                "    headers:\n      Authorization: 'Bearer ${{secrets.VAULT}}'\n"
            )
        data = zips.skill(name, description=description, extra=extra)
        assert (await upload(client, alice.headers, data)).status_code == 201


async def test_within_budget_all_are_listed_and_only_the_wanted_are_read_in_full(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await skills(client, alice)
    source = GhostSkills.from_spec(
        Scope(alice.id, "dev"), GhostSpec.model_validate({"skillSelector": {}})
    )
    cache = SkillSpecCache()
    async with app.state.sessionmaker() as session:
        turn = await turn_skills(
            session,
            source,
            cache,
            budget_tokens=4000,
            message="how high is the tide?",
            wanted=["charts", "missing"],
            threshold=0.25,
        )
        again = await turn_skills(
            session,
            source,
            cache,
            budget_tokens=4000,
            message="x",
            wanted=["charts"],
            threshold=0.25,
        )
    assert not turn.search and turn.uses_secrets
    assert [e.name for e in turn.catalog] == sorted(SKILLS)
    assert [s.name for s in turn.specs] == ["charts"] and "Do the thing" in turn.specs[0].prompt
    assert again.specs == turn.specs and (cache.misses, cache.hits) == (1, 1)


async def test_over_budget_the_catalog_is_wanted_skills_and_best_matches(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await skills(client, alice)
    source = GhostSkills.from_spec(
        Scope(alice.id, "dev"), GhostSpec.model_validate({"skills": ["charts", "avalanche"]})
    )
    async with app.state.sessionmaker() as session:
        turn = await turn_skills(
            session,
            source,
            SkillSpecCache(),
            budget_tokens=10,
            message="is the snowy slope safe?",
            wanted=["charts"],
            threshold=0.25,
        )
    assert turn.search and not turn.uses_secrets  # the vault is not one of this Ghost's
    assert [e.name for e in turn.catalog] == ["charts", "avalanche"]
    assert [s.name for s in turn.specs] == ["charts"]


async def test_a_message_with_a_dotted_capital_i_gets_its_catalog(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    # Its lowercase once carried a combining mark into the stems, and every such turn failed.
    await skills(client, alice)
    source = GhostSkills.from_spec(
        Scope(alice.id, "dev"), GhostSpec.model_validate({"skillSelector": {}})
    )
    for budget in (4000, 10):  # the full catalog, and the compact one with the best matches
        async with app.state.sessionmaker() as session:
            turn = await turn_skills(
                session,
                source,
                SkillSpecCache(),
                budget_tokens=budget,
                message="İs the snowy slope safe near İnnsbruck?",
                wanted=[],
                threshold=0.25,
            )
        assert "avalanche" in [e.name for e in turn.catalog], budget
