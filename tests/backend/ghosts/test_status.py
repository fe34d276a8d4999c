"""A Ghost listing a disabled skill says so in every answer (`status.warnings`), not silently."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.accounts import Account
from tests.support.ghosts import PUBLIC, add_skill, create, ghost, own

SKILLS = "/api/v1/namespaces/dev/skills"
PUBLIC_SKILLS = "/api/v1/public/skills"


def warnings(crd: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(w["code"], w.get("skill")) for w in crd["status"]["warnings"]]


async def _enable(client: httpx.AsyncClient, url: str, account: Account, on: bool) -> None:
    response = await client.patch(url, json={"enabled": on}, headers=account.headers)
    assert response.status_code == 200, response.text


async def test_a_disabled_skill_is_warned_about_in_every_answer_until_it_is_enabled(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await add_skill(client, alice.headers, "pdf")
    await add_skill(client, alice.headers, "docx")
    body = ghost("writer", skills=["pdf", "docx"], preloadSkills=["pdf"])
    created = await create(client, alice.headers, body)
    assert created.status_code == 201 and warnings(created.json()) == []

    await _enable(client, f"{SKILLS}/pdf", alice, False)
    got = (await client.get(f"{own()}/writer", headers=alice.headers)).json()
    assert warnings(got) == [("skill_disabled", "pdf")]
    message = got["status"]["warnings"][0]["message"]
    assert "'pdf'" in message and "namespace 'dev'" in message and "preload" in message
    assert 'PATCH /api/v1/namespaces/dev/skills/pdf {"enabled": true}' in message
    listed = (await client.get(own(), headers=alice.headers)).json()["items"]
    assert [warnings(g) for g in listed] == [[("skill_disabled", "pdf")]]
    stale_status = {**body, "status": {"warnings": [], "phase": "Ready"}}  # ignored on input
    replaced = await client.put(f"{own()}/writer", json=stale_status, headers=alice.headers)
    assert replaced.status_code == 200 and warnings(replaced.json()) == [("skill_disabled", "pdf")]
    again = await create(client, alice.headers, ghost("second", skills=["docx", "pdf"]))
    assert again.status_code == 201 and warnings(again.json()) == [("skill_disabled", "pdf")]
    in_dev = ghost("writer", namespace="dev", skills=["pdf", "docx"], preloadSkills=["pdf"])
    applied = await client.post("/api/v1/apply", json=[in_dev], headers=alice.headers)
    assert applied.status_code == 200, applied.text
    assert [w["code"] for w in applied.json()["items"][0]["warnings"]] == ["skill_disabled"]

    await _enable(client, f"{SKILLS}/pdf", alice, True)
    got = (await client.get(f"{own()}/writer", headers=alice.headers)).json()
    assert warnings(got) == []
    assert got["metadata"]["resourceVersion"] == 1  # computed when served, never stored


async def test_a_public_skill_disabled_by_an_admin_is_named_as_public(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    await add_skill(client, admin.headers, "shared", base=PUBLIC_SKILLS)
    assert (await create(client, alice.headers, ghost("g", skills=["shared"]))).status_code == 201
    public = await create(client, admin.headers, ghost("p", skills=["shared"]), base=PUBLIC)
    assert public.status_code == 201
    await _enable(client, f"{PUBLIC_SKILLS}/shared", admin, False)
    for url in (f"{own()}/g", f"{PUBLIC}/p"):
        got = (await client.get(url, headers=alice.headers)).json()
        assert warnings(got) == [("skill_disabled", "shared")]
        assert (
            "public skill 'shared' is disabled by an admin"
            in got["status"]["warnings"][0]["message"]
        )
    listed = (await client.get(PUBLIC, headers=alice.headers)).json()["items"]
    assert [warnings(g) for g in listed] == [[("skill_disabled", "shared")]]


async def test_an_own_skill_shadowing_a_disabled_public_one_is_no_warning(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    await add_skill(client, admin.headers, "shared", base=PUBLIC_SKILLS)
    await add_skill(client, alice.headers, "shared")
    await _enable(client, f"{PUBLIC_SKILLS}/shared", admin, False)
    created = await create(client, alice.headers, ghost("g", skills=["shared"]))
    assert created.status_code == 201 and warnings(created.json()) == []
    listed = (await client.get(f"{own()}?include_public=true", headers=alice.headers)).json()
    assert [warnings(g) for g in listed["items"]] == [[]]
