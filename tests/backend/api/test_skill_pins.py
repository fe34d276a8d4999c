"""A Ghost pinning `name@version`: validation on write, and retention never prunes a pin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import create, ghost, own
from tests.support.skills import upload

SKILLS = "/api/v1/namespaces/dev/skills"
RETAIN = 2


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url, data_dir=tmp_path / "data", skill_versions_retain=RETAIN
    )


def version(n: int) -> bytes:
    return zips.skill("demo", description=f"Version {n}.")


async def put_version(client: httpx.AsyncClient, account: Account, n: int) -> None:
    if n == 1:
        assert (await upload(client, account.headers, version(1))).status_code == 201
        return
    response = await client.put(
        f"{SKILLS}/demo", files={"file": ("s.zip", version(n))}, headers=account.headers
    )
    assert response.status_code == 200, response.text


async def kept(client: httpx.AsyncClient, account: Account) -> list[int]:
    response = await client.get(f"{SKILLS}/demo/versions", headers=account.headers)
    assert response.status_code == 200, response.text
    return [item["version"] for item in response.json()["items"]]


async def test_a_ghost_pins_an_existing_version_and_gets_it_back_as_written(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await put_version(client, alice, 1)
    await put_version(client, alice, 2)
    body = ghost("pinned", skills=["demo@1"], preloadSkills=["demo"])
    created = await create(client, alice.headers, body)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["skills"] == ["demo@1"]
    assert created.json()["status"]["warnings"] == []
    same_pin = ghost("again", skills=["demo@2"], preloadSkills=["demo@2"])
    assert (await create(client, alice.headers, same_pin)).status_code == 201


async def test_a_missing_version_is_skill_version_not_found_and_writes_nothing(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await put_version(client, alice, 1)
    refused = await create(client, alice.headers, ghost("pinned", skills=["demo@7"]))
    assert_error(refused, 422, "skill_version_not_found")
    assert refused.json()["error"]["details"] == {
        "skill": "demo",
        "version": 7,
        "missing": ["demo@7"],
    }
    assert (await client.get(f"{own()}/pinned", headers=alice.headers)).status_code == 404
    applied = await client.post(
        "/api/v1/apply",
        json=[
            ghost("fine", namespace="dev", skills=["demo@1"]),
            ghost("bad", namespace="dev", skills=["demo@3"]),
        ],
        headers=alice.headers,
    )
    assert_error(applied, 422, "skill_version_not_found")
    assert applied.json()["error"]["details"]["index"] == 1
    assert (await client.get(f"{own()}/fine", headers=alice.headers)).status_code == 404


@pytest.mark.parametrize(
    "ref", ["demo@0", "demo@01", "demo@x", "demo@", "demo@1@2", "Demo@1", "demo@-1", "@1"]
)
async def test_a_malformed_reference_is_invalid_skill_ref(
    client: httpx.AsyncClient, alice: Account, ref: str
) -> None:
    await put_version(client, alice, 1)
    refused = await create(client, alice.headers, ghost("bad", skills=[ref]))
    assert_error(refused, 422, "invalid_skill_ref")


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"skills": ["demo", "demo@1"]}, "duplicate_skills"),
        ({"skills": ["demo@1"], "preloadSkills": ["demo@2"]}, "preload_not_in_skills"),
        ({"skills": ["demo"], "preloadSkills": ["demo@1"]}, "preload_not_in_skills"),
    ],
)
async def test_pins_in_both_lists_must_agree(
    client: httpx.AsyncClient, alice: Account, spec: dict[str, Any], code: str
) -> None:
    await put_version(client, alice, 1)
    await put_version(client, alice, 2)
    assert_error(await create(client, alice.headers, ghost("bad", **spec)), 422, code)


async def test_retention_never_prunes_a_pinned_version(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await put_version(client, alice, 1)
    assert (await create(client, alice.headers, ghost("pinned", skills=["demo@1"]))).is_success
    for n in (2, 3, 4):
        await put_version(client, alice, n)
    assert await kept(client, alice) == [4, 3, 1]  # 2 pruned, 1 pinned
    package = await client.get(f"{SKILLS}/demo/versions/1/package", headers=alice.headers)
    assert package.content == version(1)

    # Unpinned, version 1 goes with the next write like any other.
    moved = await client.put(
        f"{own()}/pinned", json=ghost("pinned", skills=["demo@4"]), headers=alice.headers
    )
    assert moved.status_code == 200, moved.text
    await put_version(client, alice, 5)
    assert await kept(client, alice) == [5, 4]
    await put_version(client, alice, 6)
    assert await kept(client, alice) == [6, 5, 4]
    rollback = await client.post(
        f"{SKILLS}/demo/rollback", json={"version": 4}, headers=alice.headers
    )
    assert rollback.status_code == 200, rollback.text
    assert await kept(client, alice) == [7, 6, 4]


async def test_only_the_owners_resolving_ghosts_protect_a_version(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    await put_version(client, alice, 1)
    await put_version(client, bob, 1)
    assert (await create(client, bob.headers, ghost("pinned", skills=["demo@1"]))).is_success
    for n in (2, 3):
        await put_version(client, alice, n)
    assert await kept(client, alice) == [3, 2]  # bob's pin is on bob's skill


async def test_a_pinned_reference_still_blocks_deleting_the_skill(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await put_version(client, alice, 1)
    body = ghost("pinned", skills=["demo@1"], preloadSkills=["demo"])
    assert (await create(client, alice.headers, body)).is_success
    refused = await client.delete(f"{SKILLS}/demo", headers=alice.headers)
    assert_error(refused, 409, "skill_referenced")
    assert refused.json()["error"]["details"]["ghosts"] == ["dev/pinned"]
    forced = await client.delete(f"{SKILLS}/demo?force=true", headers=alice.headers)
    assert forced.status_code == 204, forced.text
    spec = (await client.get(f"{own()}/pinned", headers=alice.headers)).json()["spec"]
    assert spec["skills"] == [] and spec["preloadSkills"] == []
