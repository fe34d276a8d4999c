"""Deleting a skill a Ghost relies on: 409 `skill_referenced`, or `?force=true` drops the refs."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import PUBLIC, add_skill, create, ghost, own

SKILLS = "/api/v1/namespaces/dev/skills"
PUBLIC_SKILLS = "/api/v1/public/skills"


async def _get(client: httpx.AsyncClient, url: str, account: Account) -> dict[str, Any]:
    response = await client.get(url, headers=account.headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_deleting_a_users_skill_used_by_their_ghosts_is_409_listing_them(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    for account in (alice, bob):
        await add_skill(client, account.headers, "mine")
    await add_skill(client, alice.headers, "other")
    uses = ghost("a", skills=["other", "mine"], preloadSkills=["mine", "other"])
    assert (await create(client, alice.headers, uses)).status_code == 201
    assert (await create(client, alice.headers, ghost("b", skills=["mine"]))).status_code == 201
    assert (await create(client, alice.headers, ghost("c", skills=["other"]))).status_code == 201
    assert (await create(client, bob.headers, ghost("a", skills=["mine"]))).status_code == 201

    refused = await client.delete(f"{SKILLS}/mine", headers=alice.headers)
    assert_error(refused, 409, "skill_referenced")
    assert refused.json()["error"]["details"] == {
        "skill": "mine",
        "ghosts": ["dev/a", "dev/b"],
        "others": 0,
    }
    assert (await client.get(f"{SKILLS}/mine", headers=alice.headers)).status_code == 200

    forced = await client.delete(f"{SKILLS}/mine?force=true", headers=alice.headers)
    assert forced.status_code == 204, forced.text
    assert (await client.get(f"{SKILLS}/mine", headers=alice.headers)).status_code == 404
    a = await _get(client, f"{own()}/a", alice)
    assert a["spec"]["skills"] == ["other"] and a["spec"]["preloadSkills"] == ["other"]
    assert a["metadata"]["resourceVersion"] == 2
    assert (await _get(client, f"{own()}/b", alice))["spec"]["skills"] == []
    assert (await _get(client, f"{own()}/c", alice))["metadata"]["resourceVersion"] == 1
    # bob's Ghost uses bob's skill of that name: untouched, and his skill too
    bobs = await _get(client, f"{own()}/a", bob)
    assert bobs["spec"]["skills"] == ["mine"] and bobs["metadata"]["resourceVersion"] == 1
    assert (await client.get(f"{SKILLS}/mine", headers=bob.headers)).status_code == 200


async def test_deleting_a_public_skill_counts_other_users_ghosts_without_naming_them(
    client: httpx.AsyncClient, alice: Account, bob: Account, admin: Account
) -> None:
    await add_skill(client, admin.headers, "shared", base=PUBLIC_SKILLS)
    await add_skill(client, bob.headers, "shared")  # bob's own skill shadows the public one
    secret_name = ghost("alices-private-agent", skills=["shared"])
    assert (await create(client, alice.headers, secret_name)).status_code == 201
    assert (await create(client, bob.headers, ghost("b", skills=["shared"]))).status_code == 201
    public = ghost("pub", skills=["shared"], preloadSkills=["shared"])
    assert (await create(client, admin.headers, public, base=PUBLIC)).status_code == 201

    refused = await client.delete(f"{PUBLIC_SKILLS}/shared", headers=admin.headers)
    assert_error(refused, 409, "skill_referenced")
    assert refused.json()["error"]["details"] == {
        "skill": "shared",
        "ghosts": ["public/pub"],
        "others": 1,
    }
    assert "alices-private-agent" not in refused.text

    forced = await client.delete(f"{PUBLIC_SKILLS}/shared?force=true", headers=admin.headers)
    assert forced.status_code == 204, forced.text
    pub = await _get(client, f"{PUBLIC}/pub", alice)
    assert pub["spec"]["skills"] == [] and pub["spec"]["preloadSkills"] == []
    alices = await _get(client, f"{own()}/alices-private-agent", alice)
    assert alices["spec"]["skills"] == [] and alices["metadata"]["resourceVersion"] == 2
    bobs = await _get(client, f"{own()}/b", bob)
    assert bobs["spec"]["skills"] == ["shared"] and bobs["metadata"]["resourceVersion"] == 1


async def test_a_skill_no_ghost_uses_deletes_as_before_and_force_is_owner_only(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    await add_skill(client, alice.headers, "mine")
    assert (await create(client, alice.headers, ghost("g", skills=["mine"]))).status_code == 201
    other = await client.delete(f"{SKILLS}/mine?force=true", headers=bob.headers)
    assert_error(other, 404, "skill_not_found")
    assert (await _get(client, f"{own()}/g", alice))["spec"]["skills"] == ["mine"]
    await add_skill(client, alice.headers, "unused")
    assert (await client.delete(f"{SKILLS}/unused", headers=alice.headers)).status_code == 204
