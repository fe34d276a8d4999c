"""Bearer authentication, token lifecycle and tenancy of the token and user routes."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import inspect, select, update

from backend.auth import service
from backend.db.models import ApiToken, User
from backend.db.types import utcnow
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.wait import eventually


async def test_me_returns_the_caller(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.get("/api/v1/me", headers=alice.headers)
    assert response.status_code == 200
    assert response.json()["name"] == "alice"
    assert response.json()["role"] == "user"


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (None, "missing_token"),
        ("Basic YWxpY2U6cHc=", "malformed_token"),
        ("Bearer", "malformed_token"),
        ("Bearer two words", "malformed_token"),
        ("Bearer shk_not-a-real-token", "invalid_token"),
    ],
)
async def test_bad_credentials_are_401_with_error_shape(
    client: httpx.AsyncClient, header: str | None, code: str
) -> None:
    headers = {"Authorization": header} if header else {}
    response = await client.get("/api/v1/me", headers=headers)
    assert_error(response, 401, code)
    assert response.headers["www-authenticate"] == "Bearer"


async def test_revoked_token_is_refused(client: httpx.AsyncClient, alice: Account) -> None:
    created = await client.post("/api/v1/tokens", json={"name": "laptop"}, headers=alice.headers)
    assert created.status_code == 201
    second = {"Authorization": f"Bearer {created.json()['token']}"}
    assert (await client.get("/api/v1/me", headers=second)).status_code == 200

    revoked = await client.delete(f"/api/v1/tokens/{created.json()['id']}", headers=alice.headers)
    assert revoked.status_code == 204
    assert_error(await client.get("/api/v1/me", headers=second), 401, "token_revoked")
    # the other token still works
    assert (await client.get("/api/v1/me", headers=alice.headers)).status_code == 200


async def test_expired_token_is_refused(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    async with app.state.sessionmaker() as session:
        await session.execute(
            update(ApiToken)
            .where(ApiToken.user_id == alice.id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
        await session.commit()
    assert_error(await client.get("/api/v1/me", headers=alice.headers), 401, "token_expired")


async def test_deactivated_user_is_refused(
    client: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    patched = await client.patch(
        f"/api/v1/users/{alice.id}", json={"is_active": False}, headers=admin.headers
    )
    assert patched.status_code == 200 and patched.json()["is_active"] is False
    assert_error(await client.get("/api/v1/me", headers=alice.headers), 401, "user_inactive")


async def test_tokens_are_stored_hashed_and_last_use_recorded(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    async def token() -> ApiToken:
        async with app.state.sessionmaker() as session:
            query = select(ApiToken).where(ApiToken.user_id == alice.id)
            return (await session.scalars(query)).one()

    async with app.state.sessionmaker() as session:  # as if unused for a while
        await session.execute(update(ApiToken).values(last_used_at=None))
        await session.commit()
    # A burst of requests: the use is recorded in the background, off their path.
    for response in await asyncio.gather(
        *(client.get("/api/v1/me", headers=alice.headers) for _ in range(5))
    ):
        assert response.status_code == 200

    async def recorded() -> bool:
        return (await token()).last_used_at is not None

    await eventually(recorded)
    stored = await token()
    assert alice.token not in stored.token_hash
    assert len(stored.token_hash) == 64


async def test_the_identity_is_detached_as_if_loaded(app: FastAPI, alice: Account) -> None:
    """`identify` builds its instances without a Session: each has its identity key and its
    stored values, no pending change, and joins a session as loaded (no SQL, no write)."""
    async with app.state.sessionmaker() as session:
        identity = await service.identify(session, alice.token)
        stored = (await session.scalars(select(User).where(User.id == alice.id))).one()
        token = (await session.scalars(select(ApiToken).where(ApiToken.user_id == alice.id))).one()
        loaded = [
            (instance, inspect(row).key, {c.key: getattr(row, c.key) for c in row.__table__.c})
            for instance, row in ((identity.user, stored), (identity.token, token))
        ]
    for instance, key, values in loaded:
        state = inspect(instance)
        assert state.detached and not state.modified, key
        assert state.key == key
        assert {name: getattr(instance, name) for name in values} == values, key
    async with app.state.sessionmaker() as session:
        merged = await session.merge(identity.user, load=False)
        assert merged.name == "alice" and not session.dirty and not session.new


async def test_created_token_is_shown_once_and_long(
    client: httpx.AsyncClient, alice: Account
) -> None:
    created = await client.post("/api/v1/tokens", json={"name": "ci"}, headers=alice.headers)
    secret = created.json()["token"]
    assert len(secret) >= 43  # 32 random bytes, url-safe base64, plus the prefix
    listed = await client.get("/api/v1/tokens", headers=alice.headers)
    assert secret not in listed.text
    assert {t["name"] for t in listed.json()["items"]} == {"test", "ci"}


async def test_users_cannot_see_or_revoke_each_others_tokens(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    bobs = (await client.get("/api/v1/tokens", headers=bob.headers)).json()["items"]
    alices = (await client.get("/api/v1/tokens", headers=alice.headers)).json()["items"]
    assert {t["id"] for t in bobs}.isdisjoint({t["id"] for t in alices})
    response = await client.delete(f"/api/v1/tokens/{bobs[0]['id']}", headers=alice.headers)
    assert_error(response, 404, "token_not_found")
    assert (await client.get("/api/v1/me", headers=bob.headers)).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/v1/users", None),
        ("POST", "/api/v1/users", {"name": "mallory"}),
        ("PATCH", "/api/v1/users/1", {"is_active": False}),
    ],
)
async def test_admin_routes_are_403_for_users(
    client: httpx.AsyncClient, alice: Account, method: str, path: str, body: Any
) -> None:
    response = await client.request(method, path, json=body, headers=alice.headers)
    assert_error(response, 403, "admin_required")


async def test_admin_creates_lists_and_deactivates_users(
    client: httpx.AsyncClient, admin: Account
) -> None:
    created = await client.post("/api/v1/users", json={"name": "carol"}, headers=admin.headers)
    assert created.status_code == 201
    carol = {"Authorization": f"Bearer {created.json()['token']}"}
    assert (await client.get("/api/v1/me", headers=carol)).json()["name"] == "carol"

    names = [
        u["name"]
        for u in (await client.get("/api/v1/users", headers=admin.headers)).json()["items"]
    ]
    assert names == ["root", "carol"]  # the system user 0 is not a login

    duplicate = await client.post("/api/v1/users", json={"name": "carol"}, headers=admin.headers)
    assert_error(duplicate, 409, "user_exists")
    bad = await client.post("/api/v1/users", json={"name": "Carol!"}, headers=admin.headers)
    assert_error(bad, 422, "invalid_user_name")
    assert_error(
        await client.patch("/api/v1/users/0", json={}, headers=admin.headers), 404, "user_not_found"
    )


async def test_admin_cannot_lock_themselves_out(client: httpx.AsyncClient, admin: Account) -> None:
    response = await client.patch(
        f"/api/v1/users/{admin.id}", json={"is_active": False}, headers=admin.headers
    )
    assert_error(response, 422, "cannot_modify_self")


async def test_validation_errors_use_the_error_shape(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.post("/api/v1/tokens", json={"name": ""}, headers=alice.headers)
    assert_error(response, 422, "invalid_request")
    assert response.json()["error"]["details"]["errors"][0]["loc"] == ["body", "name"]
    assert_error(await client.get("/api/v1/nope", headers=alice.headers), 404, "not_found")


async def test_a_body_that_is_not_json_is_invalid_json_on_every_route(
    client: httpx.AsyncClient, alice: Account
) -> None:
    """Routes with a declared body and routes reading their own (the CRDs) answer alike."""
    headers = {**alice.headers, "Content-Type": "application/json"}
    for path in ("/api/v1/tokens", "/api/v1/conversations", "/api/v1/namespaces/dev/ghosts"):
        response = await client.post(path, content=b"{not json", headers=headers)
        assert_error(response, 422, "invalid_json")


async def test_metrics_are_for_admins(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    assert_error(await client.get("/api/v1/metrics", headers=alice.headers), 403, "admin_required")
    body = (await client.get("/api/v1/metrics", headers=admin.headers)).json()
    assert body["mode"] == "embedded"
    assert body["pending_requests"] == {"pending": 0, "resolved": 0, "expired": 0, "rejected": 0}


async def test_two_admins_removing_each_other_at_once_leave_one_active(
    client: httpx.AsyncClient, admin: Account, make_account: Any
) -> None:
    # Each checked only "not yourself": both succeeded, and no one could administer any more.
    other = await make_account("second", admin=True)
    first, second = await asyncio.gather(
        client.patch(f"/api/v1/users/{other.id}", json={"is_active": False}, headers=admin.headers),
        client.patch(f"/api/v1/users/{admin.id}", json={"is_active": False}, headers=other.headers),
    )
    statuses = sorted([first.status_code, second.status_code])
    assert statuses[0] == 200 and statuses[1] in (401, 403, 422), (first.text, second.text)
    if statuses[1] == 422:
        refused = first if first.status_code == 422 else second
        assert_error(refused, 422, "last_admin")
    survivor = admin if first.status_code == 200 else other
    users = (await client.get("/api/v1/users", headers=survivor.headers)).json()["items"]
    assert [u["id"] for u in users if u["role"] == "admin" and u["is_active"]] == [survivor.id]
