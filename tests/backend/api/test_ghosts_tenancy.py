"""Who may do what with Ghosts: owner, another user, an admin, anonymous; public Ghosts."""

from __future__ import annotations

import httpx
import pytest

from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import PUBLIC, create, ghost, own

OWN = own()

# (method, path under the collection)
ROUTES = [("GET", ""), ("POST", ""), ("GET", "/tenant"), ("PUT", "/tenant"), ("DELETE", "/tenant")]


async def _call(
    client: httpx.AsyncClient, method: str, url: str, headers: dict[str, str]
) -> httpx.Response:
    body = ghost("tenant", systemPrompt="changed") if method in ("POST", "PUT") else None
    return await client.request(method, url, json=body, headers=headers)


@pytest.mark.parametrize(("method", "suffix"), ROUTES)
async def test_other_users_and_admins_get_404_on_someone_elses_ghost(
    client: httpx.AsyncClient,
    alice: Account,
    bob: Account,
    admin: Account,
    method: str,
    suffix: str,
) -> None:
    assert (await create(client, alice.headers, ghost("tenant"))).status_code == 201
    for intruder in (bob, admin):
        response = await _call(client, method, OWN + suffix, intruder.headers)
        if suffix == "":  # the collection is the intruder's own namespace
            assert response.status_code in (200, 201), response.text
            if method == "GET":
                assert response.json()["items"] == []
        else:
            assert_error(response, 404, "ghost_not_found")
    crd = (await client.get(f"{OWN}/tenant", headers=alice.headers)).json()
    assert crd["metadata"]["resourceVersion"] == 1
    assert crd["spec"]["systemPrompt"] == "You help."


@pytest.mark.parametrize(("method", "suffix"), ROUTES)
async def test_owner_may_use_every_route(
    client: httpx.AsyncClient, alice: Account, method: str, suffix: str
) -> None:
    if method != "POST":
        assert (await create(client, alice.headers, ghost("tenant"))).status_code == 201
    response = await _call(client, method, OWN + suffix, alice.headers)
    assert response.status_code in (200, 201, 204), response.text


@pytest.mark.parametrize(("method", "suffix"), ROUTES)
async def test_anonymous_gets_401_everywhere(
    client: httpx.AsyncClient, method: str, suffix: str
) -> None:
    for base in (OWN, PUBLIC):
        assert_error(await _call(client, method, base + suffix, {}), 401, "missing_token")
    bad = {"Authorization": "Bearer shk_not-a-token"}
    assert (await _call(client, method, OWN + suffix, bad)).status_code == 401


async def test_anonymous_cannot_apply(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/v1/apply", json=[ghost("g")])
    assert_error(response, 401, "missing_token")


@pytest.mark.parametrize(("method", "suffix"), [r for r in ROUTES if r[0] != "GET"])
async def test_users_cannot_write_public_ghosts(
    client: httpx.AsyncClient, alice: Account, admin: Account, method: str, suffix: str
) -> None:
    assert (await create(client, admin.headers, ghost("tenant"), base=PUBLIC)).status_code == 201
    response = await _call(client, method, PUBLIC + suffix, alice.headers)
    assert_error(response, 403, "admin_required")
    crd = (await client.get(f"{PUBLIC}/tenant", headers=alice.headers)).json()
    assert crd["metadata"]["resourceVersion"] == 1


@pytest.mark.parametrize(("method", "suffix"), ROUTES)
async def test_admins_may_use_every_public_route_and_users_read_them(
    client: httpx.AsyncClient, alice: Account, admin: Account, method: str, suffix: str
) -> None:
    if method != "POST":
        assert (
            await create(client, admin.headers, ghost("tenant"), base=PUBLIC)
        ).status_code == 201
    response = await _call(client, method, PUBLIC + suffix, admin.headers)
    assert response.status_code in (200, 201, 204), response.text
    if method == "GET":
        assert (await _call(client, method, PUBLIC + suffix, alice.headers)).status_code == 200
