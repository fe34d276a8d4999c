"""`?dryRun=true` on `POST /api/v1/apply` and on skill upload/replace: every check, no write."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import add_skill, ghost, ghost_rows, own
from tests.support.skills import upload, user_rows

DRY = "?dryRun=true"


async def test_a_dry_run_apply_reports_the_actions_and_writes_nothing(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await add_skill(client, alice.headers, "mine")
    body = [ghost("writer", namespace="dev", skills=["mine"])]
    dry = await client.post(f"/api/v1/apply{DRY}", json=body, headers=alice.headers)
    assert dry.status_code == 200, dry.text
    assert [i["action"] for i in dry.json()["items"]] == ["created"]
    assert await ghost_rows(app) == 0
    real = await client.post("/api/v1/apply", json=body, headers=alice.headers)
    assert [i["action"] for i in real.json()["items"]] == ["created"]
    changed = [ghost("writer", namespace="dev", skills=["mine"], systemPrompt="Changed.")]
    dry_change = await client.post(f"/api/v1/apply{DRY}", json=changed, headers=alice.headers)
    assert [i["action"] for i in dry_change.json()["items"]] == ["configured"]
    stored = (await client.get(f"{own('dev')}/writer", headers=alice.headers)).json()
    assert stored["metadata"]["resourceVersion"] == 1
    assert stored["spec"]["systemPrompt"] != "Changed."


async def test_a_dry_run_apply_refuses_what_the_real_one_would(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = [ghost("writer", namespace="dev", skills=["absent"])]
    refused = await client.post(f"/api/v1/apply{DRY}", json=body, headers=alice.headers)
    assert_error(refused, 422, "unknown_skills")


async def test_a_dry_run_upload_answers_the_crd_and_stores_nothing(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    dry = await upload(client, alice.headers, zips.skill("demo"), query=DRY)
    assert dry.status_code == 201, dry.text
    assert dry.json()["metadata"]["name"] == "demo"
    assert await user_rows(app) == (0, 0)
    broken = zips.build({"SKILL.md": "---\nname: Bad Name\ndescription: x\n---\n"})
    assert_error(await upload(client, alice.headers, broken, query=DRY), 422, "invalid_name")
    assert (await upload(client, alice.headers, zips.skill("demo"))).status_code == 201
    assert_error(
        await upload(client, alice.headers, zips.skill("demo"), query=DRY), 409, "skill_exists"
    )


async def test_a_dry_run_replace_keeps_the_stored_version(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await upload(client, alice.headers, zips.skill("demo"))).status_code == 201
    changed = zips.skill("demo", description="Another description.")
    dry = await client.put(
        f"/api/v1/namespaces/dev/skills/demo{DRY}",
        content=changed,
        headers={**alice.headers, "Content-Type": "application/zip"},
    )
    assert dry.status_code == 200, dry.text
    assert dry.json()["spec"]["description"] == "Another description."
    stored = await client.get("/api/v1/namespaces/dev/skills/demo", headers=alice.headers)
    assert stored.json()["metadata"]["resourceVersion"] == 1
    assert stored.json()["spec"]["description"] != "Another description."
    versions = await client.get(
        "/api/v1/namespaces/dev/skills/demo/versions", headers=alice.headers
    )
    assert [v["version"] for v in versions.json()["items"]] == [1]
