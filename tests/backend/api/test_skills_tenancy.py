"""Who may do what with skills: owner, another user, an admin, anonymous; public skills."""

from __future__ import annotations

import httpx
import pytest

from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.skills import upload

OWN = "/api/v1/namespaces/dev/skills"
PUBLIC = "/api/v1/public/skills"

# (method, path under the collection, needs an archive body)
ROUTES = [
    ("GET", "", False),
    ("POST", "", True),
    ("GET", "/tenant", False),
    ("PUT", "/tenant", True),
    ("PATCH", "/tenant", False),
    ("DELETE", "/tenant", False),
    ("GET", "/tenant/package", False),
    ("GET", "/tenant/files/SKILL.md", False),
    ("GET", "/tenant/versions", False),
    ("GET", "/tenant/versions/1", False),
    ("GET", "/tenant/versions/1/package", False),
    ("POST", "/tenant/rollback", False),
]


async def _call(
    client: httpx.AsyncClient, method: str, url: str, body: bool, headers: dict[str, str]
) -> httpx.Response:
    if body:
        files = {"file": ("s.zip", zips.skill("tenant"))}
        return await client.request(method, url, files=files, headers=headers)
    json: dict[str, object] | None = {"labels": {"x": "y"}} if method == "PATCH" else None
    if url.endswith("/rollback"):
        json = {"version": 1}
    return await client.request(method, url, json=json, headers=headers)


@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
async def test_other_users_and_admins_get_404_on_someone_elses_skill(
    client: httpx.AsyncClient,
    alice: Account,
    bob: Account,
    admin: Account,
    method: str,
    suffix: str,
    body: bool,
) -> None:
    assert (await upload(client, alice.headers, zips.skill("tenant"))).status_code == 201
    for intruder in (bob, admin):
        response = await _call(client, method, OWN + suffix, body, intruder.headers)
        if suffix == "":  # the collection is the intruder's own, empty namespace
            assert response.status_code in (200, 201)
            if method == "GET":
                assert response.json()["items"] == []
        else:
            assert_error(response, 404, "skill_not_found")
    # alice's skill is untouched
    crd = (await client.get(f"{OWN}/tenant", headers=alice.headers)).json()
    assert crd["metadata"]["resourceVersion"] == 1
    assert crd["metadata"]["labels"] == {}


@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
async def test_owner_may_use_every_route(
    client: httpx.AsyncClient, alice: Account, method: str, suffix: str, body: bool
) -> None:
    if suffix:  # every route but the collection works on an existing skill
        assert (await upload(client, alice.headers, zips.skill("tenant"))).status_code == 201
    response = await _call(client, method, OWN + suffix, body, alice.headers)
    assert response.status_code in (200, 201, 204), response.text


@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
async def test_anonymous_gets_401_everywhere(
    client: httpx.AsyncClient, method: str, suffix: str, body: bool
) -> None:
    for base in (OWN, PUBLIC):
        response = await _call(client, method, base + suffix, body, {})
        assert_error(response, 401, "missing_token")


@pytest.mark.parametrize(("method", "suffix", "body"), [r for r in ROUTES if r[0] != "GET"])
async def test_users_cannot_write_public_skills(
    client: httpx.AsyncClient, alice: Account, admin: Account, method: str, suffix: str, body: bool
) -> None:
    created = await client.post(
        PUBLIC, files={"file": ("s.zip", zips.skill("tenant"))}, headers=admin.headers
    )
    assert created.status_code == 201
    response = await _call(client, method, PUBLIC + suffix, body, alice.headers)
    assert_error(response, 403, "admin_required")
    assert (await client.get(f"{PUBLIC}/tenant", headers=alice.headers)).json()["metadata"][
        "resourceVersion"
    ] == 1


RESERVED = "/api/v1/namespaces/public/skills"
WRITES = [r for r in ROUTES if r[0] not in ("GET", "DELETE")] + [("POST", "?dryRun=true", True)]


@pytest.mark.parametrize(("method", "suffix", "body"), WRITES)
async def test_no_user_writes_skills_into_the_namespace_public(
    client: httpx.AsyncClient, alice: Account, admin: Account, method: str, suffix: str, body: bool
) -> None:
    # Search shows public skills in namespace `public`: a user's own there would pass for one.
    for account in (alice, admin):  # an admin publishes through /public/skills, not here
        response = await _call(client, method, RESERVED + suffix, body, account.headers)
        assert_error(response, 422, "invalid_namespace")
    for account in (alice, admin):
        listed = await client.get(RESERVED, headers=account.headers)
        assert listed.json()["items"] == []


async def test_imports_and_syncs_into_the_namespace_public_are_refused_before_fetching(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = {"url": "https://skills.example.com/repo.zip"}  # never fetched
    imported = await client.post(f"{RESERVED}/import", json=body, headers=alice.headers)
    assert_error(imported, 422, "invalid_namespace")
    synced = await client.post(f"{RESERVED}/tenant/sync", headers=alice.headers)
    assert_error(synced, 422, "invalid_namespace")


async def test_search_shows_namespace_public_for_public_skills_only(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    data = zips.skill("harbour-tides", description="Read harbour tide tables.")
    refused = await upload(client, alice.headers, data, namespace="public")
    assert_error(refused, 422, "invalid_namespace")
    assert (await upload(client, alice.headers, data, namespace="publicity")).status_code == 201
    public = await client.post(PUBLIC, files={"file": ("s.zip", data)}, headers=admin.headers)
    assert public.status_code == 201, public.text
    found = await client.get(
        "/api/v1/skills/search", params={"q": "harbour tides"}, headers=alice.headers
    )
    places = [i["namespace"] for i in found.json()["items"] if i["name"] == "harbour-tides"]
    assert sorted(places) == ["public", "publicity"]  # the one in `public` is the admin's


async def test_public_skills_are_readable_by_all_and_may_carry_code(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    provider = "provider:\n  module: tools\n  class: Tools\n"
    data = zips.skill("coder", extra=provider, files={"tools.py": "X = 1\n"})
    public = await client.post(PUBLIC, files={"file": ("s.zip", data)}, headers=admin.headers)
    assert public.status_code == 201, public.text
    assert public.json()["status"]["public"] is True
    assert public.json()["status"]["codeAllowed"] is True
    assert "code_not_allowed" not in {w["code"] for w in public.json()["status"]["warnings"]}

    for reader in (alice, admin):
        got = await client.get(f"{PUBLIC}/coder", headers=reader.headers)
        assert got.status_code == 200
        assert (await client.get(f"{PUBLIC}/coder/package", headers=reader.headers)).content == data
        assert (
            await client.get(f"{PUBLIC}/coder/files/tools.py", headers=reader.headers)
        ).content == b"X = 1\n"

    own = await upload(client, alice.headers, data)
    assert own.status_code == 201
    assert own.json()["status"]["codeAllowed"] is False
    assert "code_not_allowed" in {w["code"] for w in own.json()["status"]["warnings"]}

    listed = (await client.get(PUBLIC, headers=alice.headers)).json()["items"]
    assert {"coder", "skillhive-skill-authoring"} <= {i["metadata"]["name"] for i in listed}
    assert all(i["status"]["public"] for i in listed)
