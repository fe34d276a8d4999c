"""Ghost CRD API: create, read, list, replace, delete; resourceVersion and If-Match."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import PUBLIC, add_skill, create, ghost, ghost_rows, own

BASE = own()


async def test_create_returns_the_stored_crd_and_get_returns_it_again(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await add_skill(client, alice.headers, "pdf-tools")
    body = ghost(
        "writer",
        skills=["pdf-tools", "skillhive-skill-authoring"],
        preloadSkills=["pdf-tools"],
        mcpServers={"docs": {"url": "https://mcp.example.com/mcp", "timeout": 5}},
        model={"name": "gpt-4o-mini", "temperature": 0.2, "maxTokens": 500},
        retentionTurns=3,
    )
    body["metadata"]["labels"] = {"team": "docs"}
    response = await create(client, alice.headers, body)
    assert response.status_code == 201, response.text
    assert response.headers["etag"] == '"1"'
    crd = response.json()
    assert crd["apiVersion"] == "skillhive.io/v1" and crd["kind"] == "Ghost"
    assert crd["metadata"]["name"] == "writer"
    assert crd["metadata"]["namespace"] == "dev"
    assert crd["metadata"]["labels"] == {"team": "docs"}
    assert crd["metadata"]["resourceVersion"] == 1
    assert crd["metadata"]["creationTimestamp"]
    assert crd["spec"] == {
        "systemPrompt": "You help.",
        "skills": ["pdf-tools", "skillhive-skill-authoring"],
        "preloadSkills": ["pdf-tools"],
        "mcpServers": {"docs": {"url": "https://mcp.example.com/mcp", "timeout": 5.0}},
        "model": {"name": "gpt-4o-mini", "temperature": 0.2, "maxTokens": 500},
        "retentionTurns": 3,
    }
    got = await client.get(f"{BASE}/writer", headers=alice.headers)
    assert got.status_code == 200
    assert got.json() == crd
    assert got.headers["etag"] == '"1"'


async def test_api_version_and_kind_are_optional_but_checked(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    bare = {"metadata": {"name": "bare"}, "spec": {}}
    response = await create(client, alice.headers, bare)
    assert response.status_code == 201, response.text
    assert response.json()["kind"] == "Ghost"
    assert response.json()["spec"]["systemPrompt"] == ""
    for key, value in (("kind", "Skill"), ("apiVersion", "skillhive.io/v2")):
        wrong = {**ghost("wrong"), key: value}
        assert_error(await create(client, alice.headers, wrong), 422, "invalid_ghost")
    assert await ghost_rows(app) == 1


async def test_a_taken_name_is_409_and_other_namespaces_are_separate(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await create(client, alice.headers, ghost("twin"))).status_code == 201
    assert_error(await create(client, alice.headers, ghost("twin")), 409, "ghost_exists")
    other = await create(client, alice.headers, ghost("twin"), base=own("prod"))
    assert other.status_code == 201
    assert other.json()["metadata"]["namespace"] == "prod"


async def test_body_namespace_and_url_name_must_match_the_url(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    mismatch = await create(client, alice.headers, ghost("a", namespace="prod"))
    assert_error(mismatch, 422, "namespace_mismatch")
    assert mismatch.json()["error"]["details"] == {"expected": "dev", "found": "prod"}
    assert (await create(client, alice.headers, ghost("a", namespace="dev"))).status_code == 201
    renamed = await client.put(f"{BASE}/a", json=ghost("b"), headers=alice.headers)
    assert_error(renamed, 422, "name_mismatch")
    assert renamed.json()["error"]["details"] == {"expected": "a", "found": "b"}
    assert await ghost_rows(app) == 1


async def test_put_replaces_and_honours_if_match_and_body_resource_version(
    client: httpx.AsyncClient, alice: Account
) -> None:
    created = (await create(client, alice.headers, ghost("g"))).json()
    changed = ghost("g", systemPrompt="Be brief.")

    stale = await client.put(
        f"{BASE}/g", json=changed, headers={**alice.headers, "If-Match": '"7"'}
    )
    assert_error(stale, 412, "resource_version_mismatch")
    assert stale.json()["error"]["details"] == {"current": 1, "expected": 7}
    stale_body = {**changed, "metadata": {"name": "g", "resourceVersion": 3}}
    assert_error(
        await client.put(f"{BASE}/g", json=stale_body, headers=alice.headers),
        412,
        "resource_version_mismatch",
    )
    bad_header = await client.put(
        f"{BASE}/g", json=changed, headers={**alice.headers, "If-Match": "soon"}
    )
    assert_error(bad_header, 412, "resource_version_mismatch")

    ok = await client.put(f"{BASE}/g", json=changed, headers={**alice.headers, "If-Match": '"1"'})
    assert ok.status_code == 200, ok.text
    assert ok.headers["etag"] == '"2"'
    assert ok.json()["spec"]["systemPrompt"] == "Be brief."
    assert ok.json()["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]

    # a GET's output PUT back unchanged is not a change: the version stays
    again = await client.put(f"{BASE}/g", json=ok.json(), headers=alice.headers)
    assert again.status_code == 200
    assert again.json()["metadata"]["resourceVersion"] == 2

    missing = await client.put(f"{BASE}/nope", json=ghost("nope"), headers=alice.headers)
    assert_error(missing, 404, "ghost_not_found")
    assert missing.json()["error"]["message"] == "Ghost 'nope' not found in namespace 'dev'"
    assert missing.json()["error"]["details"] == {
        "name": "nope",
        "namespace": "dev",
        "public": False,
    }


async def test_delete_honours_if_match_then_the_ghost_is_gone(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await create(client, alice.headers, ghost("g"))).status_code == 201
    stale = await client.delete(f"{BASE}/g", headers={**alice.headers, "If-Match": '"2"'})
    assert_error(stale, 412, "resource_version_mismatch")
    # "²" (latin-1) passes str.isdigit() but not int(); Python parses no 5,000-digit int: 500s
    for odd in (b"\xb2", b"1" * 5000, b"\xd9\xa3", b"99999999999999999999"):
        refused = await client.delete(f"{BASE}/g", headers={**alice.headers, "If-Match": odd})
        assert_error(refused, 412, "resource_version_mismatch")
        replaced = await client.put(
            f"{BASE}/g", json=ghost("g"), headers={**alice.headers, "If-Match": odd}
        )
        assert_error(replaced, 412, "resource_version_mismatch")
    assert await ghost_rows(app) == 1
    gone = await client.delete(f"{BASE}/g", headers={**alice.headers, "If-Match": '"1"'})
    assert gone.status_code == 204
    assert_error(await client.get(f"{BASE}/g", headers=alice.headers), 404, "ghost_not_found")
    assert_error(await client.delete(f"{BASE}/g", headers=alice.headers), 404, "ghost_not_found")
    assert await ghost_rows(app) == 0


async def test_list_pages_by_name_and_may_include_public_ghosts(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    for name in ("e", "c", "a", "d", "b"):
        assert (await create(client, alice.headers, ghost(name))).status_code == 201
    assert (await create(client, admin.headers, ghost("shared"), base=PUBLIC)).status_code == 201

    names: list[str] = []
    token = None
    while True:
        query = f"?limit=2{'&continue=' + token if token else ''}"
        page = (await client.get(BASE + query, headers=alice.headers)).json()
        assert len(page["items"]) <= 2
        names += [item["metadata"]["name"] for item in page["items"]]
        token = page["continue"]
        if token is None:
            break
    assert names == ["a", "b", "c", "d", "e"]

    both = (await client.get(f"{BASE}?include_public=true", headers=alice.headers)).json()
    assert [i["metadata"]["name"] for i in both["items"]] == ["a", "b", "c", "d", "e", "shared"]
    public = (await client.get(PUBLIC, headers=alice.headers)).json()
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in public["items"]] == [
        ("public", "shared")
    ]
    assert_error(
        await client.get(f"{BASE}?continue=garbage", headers=alice.headers),
        422,
        "invalid_cursor",
    )


async def test_public_ghosts_live_in_namespace_public_and_see_public_skills_only(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    await add_skill(client, admin.headers, "admins-own")  # the admin's own skill, not public
    await add_skill(client, admin.headers, "shared", base="/api/v1/public/skills")
    body = ghost("helper", skills=["shared"], mcpServers={"t": {"command": "python3"}})
    created = await create(client, admin.headers, body, base=PUBLIC)
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["namespace"] == "public"
    assert (await client.get(f"{PUBLIC}/helper", headers=alice.headers)).status_code == 200

    own_skill = await create(client, admin.headers, ghost("x", skills=["admins-own"]), base=PUBLIC)
    assert_error(own_skill, 422, "unknown_skills")
    elsewhere = await create(client, admin.headers, ghost("x", namespace="dev"), base=PUBLIC)
    assert_error(elsewhere, 422, "namespace_mismatch")
    explicit = await create(client, admin.headers, ghost("x", namespace="public"), base=PUBLIC)
    assert explicit.status_code == 201


async def test_users_may_not_use_the_public_namespace_for_ghosts(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    response = await create(client, alice.headers, ghost("g"), base=own("public"))
    assert_error(response, 422, "invalid_namespace")
    assert await ghost_rows(app) == 0
