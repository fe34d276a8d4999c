"""The search API: exactly the agent's search_skills ranking, and a search over all one reads."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from backend.chat.catalog import GhostSkillDirectory, SkillSpecCache
from backend.crd.ghost import GhostSpec
from backend.kinds.store import Scope
from backend.skills.search.engine import search
from backend.skills.search.selection import GhostSkills
from backend.skills.search.semantic import ranker_for
from tests.support import zips
from tests.support.accounts import Account
from tests.support.embeddings import EmbeddingsServer
from tests.support.ghosts import PUBLIC, create, ghost
from tests.support.skills import upload

PUBLIC_SKILLS = "/api/v1/public/skills"


async def add(
    client: httpx.AsyncClient, account: Account, name: str, description: str, **kw: str
) -> None:
    data = zips.skill(name, description=description)
    if kw.get("base"):
        response = await client.post(
            kw["base"], files={"file": ("s.zip", data)}, headers=account.headers
        )
    else:
        response = await upload(client, account.headers, data, namespace=kw.get("ns", "dev"))
    assert response.status_code == 201, response.text


async def test_a_ghosts_search_returns_the_ranking_its_agent_gets(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await add(client, alice, "tides", "Predict the tides of a harbour for sailors.")
    await add(client, alice, "charts", "Draw charts of numbers. Use when asked to plot data.")
    await add(client, alice, "elsewhere", "Predict tides.", ns="prod")
    body = ghost("sailor", skillSelector={})
    assert (await create(client, alice.headers, body)).status_code == 201
    response = await client.get(
        "/api/v1/namespaces/dev/ghosts/sailor/skills/search",
        params={"q": "when is high tide in the harbour?"},
        headers=alice.headers,
    )
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [i["name"] for i in items] == ["tides"]
    assert set(items[0]) == {"name", "namespace", "description", "score"}
    assert items[0]["namespace"] == "dev" and 0 < items[0]["score"] <= 1
    async with app.state.sessionmaker() as session:
        spec = GhostSpec.model_validate({"skillSelector": {}})
        hits = await search(
            session,
            GhostSkills.from_spec(Scope(alice.id, "dev"), spec),
            "when is high tide in the harbour?",
            limit=5,
            threshold=app.state.settings.skill_search_threshold,
        )
    assert [(h.name, h.score) for h in hits] == [(i["name"], i["score"]) for i in items]


async def test_small_talk_finds_nothing(client: httpx.AsyncClient, alice: Account) -> None:
    await add(client, alice, "tides", "Predict the tides of a harbour for sailors.")
    response = await client.get(
        "/api/v1/skills/search", params={"q": "hi, how are you?"}, headers=alice.headers
    )
    assert response.status_code == 200 and response.json() == {"items": []}


async def test_searching_everything_covers_own_namespaces_and_public_skills_only(
    client: httpx.AsyncClient, alice: Account, bob: Account, admin: Account
) -> None:
    await add(client, alice, "tides", "Predict the tides of a harbour.", ns="prod")
    await add(client, bob, "bob-tides", "Predict the tides of a harbour.")
    await add(client, admin, "public-tides", "Predict the tides of a harbour.", base=PUBLIC_SKILLS)
    response = await client.get(
        "/api/v1/skills/search", params={"q": "harbour tides", "limit": 50}, headers=alice.headers
    )
    found = {(i["namespace"], i["name"]) for i in response.json()["items"]}
    assert found == {("prod", "tides"), ("public", "public-tides")}


async def test_another_users_ghost_is_not_found(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    assert (await create(client, alice.headers, ghost("mine", skillSelector={}))).status_code == 201
    response = await client.get(
        "/api/v1/namespaces/dev/ghosts/mine/skills/search",
        params={"q": "tides"},
        headers=bob.headers,
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "ghost_not_found"


async def test_a_public_ghosts_search_covers_public_skills(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    await add(client, admin, "public-tides", "Predict the tides of a harbour.", base=PUBLIC_SKILLS)
    await add(client, alice, "tides", "Predict the tides of a harbour.")
    body = ghost("sailor", includePublicSkills=True)
    assert (await create(client, admin.headers, body, base=PUBLIC)).status_code == 201
    response = await client.get(
        "/api/v1/public/ghosts/sailor/skills/search",
        params={"q": "harbour tides"},
        headers=alice.headers,
    )
    assert [(i["namespace"], i["name"]) for i in response.json()["items"]] == [
        ("public", "public-tides")
    ]


async def test_bad_parameters_are_refused_with_a_clear_error(
    client: httpx.AsyncClient, alice: Account
) -> None:
    for params in ({}, {"q": ""}, {"q": "x", "limit": 0}, {"q": "x", "limit": 51}):
        response = await client.get("/api/v1/skills/search", params=params, headers=alice.headers)
        assert response.status_code == 422, (params, response.text)
        assert "code" in response.json()["error"]
    assert (await client.get("/api/v1/skills/search", params={"q": "x"})).status_code == 401


async def test_with_an_embeddings_endpoint_the_api_ranks_as_the_agents_directory(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    """The route and the turn's `search_skills` directory take the same semantic ranking."""
    await add(client, alice, "bars", "Draw bar charts of numbers for reports.")
    await add(client, alice, "pies", "Draw pie charts of shares for slides.")
    await add(client, alice, "tides", "Draw charts of the tides for sailors.")
    assert (
        await create(client, alice.headers, ghost("sailor", skillSelector={}))
    ).status_code == 201
    query = "draw me charts of the sea"
    url = "/api/v1/namespaces/dev/ghosts/sailor/skills/search"
    params = {"q": query}
    plain = app.state.settings
    app.state.settings = plain.model_copy(update={"skill_search_threshold": 0.05})
    lexical = (await client.get(url, params=params, headers=alice.headers)).json()["items"]
    assert [i["name"] for i in lexical][0] != "tides"
    with EmbeddingsServer({"sea": "tides"}) as server:
        settings = app.state.settings.model_copy(
            update={"embeddings_url": server.url, "egress_allow": ["127.0.0.1"]}
        )
        app.state.settings = settings
        try:
            response = await client.get(url, params=params, headers=alice.headers)
            spec = GhostSpec.model_validate({"skillSelector": {}})
            source = GhostSkills.from_spec(Scope(alice.id, "dev"), spec)
            directory = GhostSkillDirectory(
                app.state.sessionmaker,
                source,
                SkillSpecCache(),
                threshold=0.05,
                rerank=ranker_for(settings),
            )
            matches = await directory.search(query, 5)
        finally:
            app.state.settings = plain
    items = response.json()["items"]
    assert items[0]["name"] == "tides"
    assert [(i["name"], i["score"]) for i in items] == [(m.name, m.score) for m in matches]


async def test_a_dotted_capital_i_is_a_letter_in_requests_and_skills_alike(
    client: httpx.AsyncClient, alice: Account
) -> None:
    # "İ".lower() is "i" plus a combining dot: a stem with it once made every search a 500.
    await add(client, alice, "bosphorus", "Plan a ferry trip across İstanbul and the Bosphorus.")
    for q in ("İstanbul ferry", "istanbul ferry", "İ"):
        response = await client.get("/api/v1/skills/search", params={"q": q}, headers=alice.headers)
        assert response.status_code == 200, response.text
        names = [i["name"] for i in response.json()["items"]]
        assert names == ([] if q == "İ" else ["bosphorus"]), (q, names)
