"""Skill version routes: history, a version's CRD and package, rollback."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.skills import upload

OWN = "/api/v1/namespaces/dev/skills"
PUBLIC = "/api/v1/public/skills"
FIRST = zips.skill("demo")
SECOND = zips.skill("demo", description="Second.")


async def _two_versions(client: httpx.AsyncClient, account: Account) -> None:
    assert (await upload(client, account.headers, FIRST)).status_code == 201
    replaced = await client.put(
        f"{OWN}/demo", files={"file": ("s.zip", SECOND)}, headers=account.headers
    )
    assert replaced.status_code == 200, replaced.text


async def test_history_lists_versions_newest_first_without_bytes(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await _two_versions(client, alice)
    response = await client.get(f"{OWN}/demo/versions", headers=alice.headers)
    assert response.status_code == 200
    items = response.json()["items"]
    assert [i["version"] for i in items] == [2, 1]
    assert items[0]["sha256"] == hashlib.sha256(SECOND).hexdigest()
    assert items[1]["size"] == len(FIRST)
    assert {i["created_by"] for i in items} == {alice.id}
    assert items[0]["source"] == {"type": "upload"}
    assert set(items[0]) == {"version", "sha256", "size", "created_at", "created_by", "source"}


async def test_a_version_serves_its_crd_and_package_as_they_were(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await _two_versions(client, alice)
    crd = (await client.get(f"{OWN}/demo/versions/1", headers=alice.headers)).json()
    assert crd["spec"]["description"] == "A demo skill."
    assert crd["metadata"]["resourceVersion"] == 1
    package = await client.get(f"{OWN}/demo/versions/1/package", headers=alice.headers)
    assert package.content == FIRST
    etag = package.headers["ETag"]
    assert etag == f'"{hashlib.sha256(FIRST).hexdigest()}"'
    again = await client.get(
        f"{OWN}/demo/versions/1/package", headers={**alice.headers, "If-None-Match": etag}
    )
    assert again.status_code == 304


async def test_rollback_returns_the_new_crd_and_is_itself_a_version(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await _two_versions(client, alice)
    response = await client.post(f"{OWN}/demo/rollback", json={"version": 1}, headers=alice.headers)
    assert response.status_code == 200, response.text
    assert response.json()["spec"]["description"] == "A demo skill."
    assert response.json()["metadata"]["resourceVersion"] == 3
    assert response.headers["ETag"] == '"3"'
    assert (await client.get(f"{OWN}/demo/package", headers=alice.headers)).content == FIRST
    items = (await client.get(f"{OWN}/demo/versions", headers=alice.headers)).json()["items"]
    assert items[0]["version"] == 3
    assert items[0]["source"] == {"type": "rollback", "version": 1}


@pytest.mark.parametrize("suffix", ["/versions/9", "/versions/9/package"])
async def test_unknown_versions_are_version_not_found(
    client: httpx.AsyncClient, alice: Account, suffix: str
) -> None:
    await _two_versions(client, alice)
    assert_error(
        await client.get(OWN + "/demo" + suffix, headers=alice.headers), 404, "version_not_found"
    )


async def test_rollback_to_an_unknown_version_is_404_and_changes_nothing(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await _two_versions(client, alice)
    response = await client.post(f"{OWN}/demo/rollback", json={"version": 9}, headers=alice.headers)
    assert_error(response, 404, "version_not_found")
    crd = (await client.get(f"{OWN}/demo", headers=alice.headers)).json()
    assert crd["metadata"]["resourceVersion"] == 2


@pytest.mark.parametrize(
    "body", [{}, {"version": "one"}, {"version": 0}, [], {"version": True}, {"version": "1"}]
)
async def test_a_bad_rollback_body_is_422(
    client: httpx.AsyncClient, alice: Account, body: object
) -> None:
    await _two_versions(client, alice)
    response = await client.post(f"{OWN}/demo/rollback", json=body, headers=alice.headers)
    assert_error(response, 422, "invalid_request")


async def test_admins_roll_back_public_skills_and_are_recorded_as_the_author(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    for data in (FIRST, SECOND):
        method = "POST" if data is FIRST else "PUT"
        url = PUBLIC if data is FIRST else f"{PUBLIC}/demo"
        sent = await client.request(
            method, url, files={"file": ("s.zip", data)}, headers=admin.headers
        )
        assert sent.status_code in (200, 201), sent.text
    rolled = await client.post(
        f"{PUBLIC}/demo/rollback", json={"version": 1}, headers=admin.headers
    )
    assert rolled.status_code == 200
    items = (await client.get(f"{PUBLIC}/demo/versions", headers=alice.headers)).json()["items"]
    assert [(i["version"], i["created_by"]) for i in items] == [
        (3, admin.id),
        (2, admin.id),
        (1, admin.id),
    ]
