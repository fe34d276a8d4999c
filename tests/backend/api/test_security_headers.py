"""Every HTTP answer is data, not a document a browser may run or frame: `nosniff` and a CSP,
unless the route set its own (the console's strict one is kept as it is, never doubled)."""

from __future__ import annotations

import httpx
import pytest

from backend.api.console import CSP
from backend.api.security_headers import API_POLICY
from tests.support.accounts import Account

pytestmark = pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)


def policy_of(response: httpx.Response) -> list[str]:
    return response.headers.get_list("content-security-policy")


async def test_api_answers_and_errors_carry_nosniff_and_a_no_content_policy(
    client: httpx.AsyncClient, alice: Account
) -> None:
    answers = [
        await client.get("/api/v1/me", headers=alice.headers),
        await client.get("/api/v1/me"),  # 401
        await client.get("/api/v1/nowhere", headers=alice.headers),  # 404
        await client.post(
            "/api/v1/conversations", headers=alice.headers, content=b"{", timeout=10
        ),  # 422
        await client.get("/healthz"),
        await client.get("/openapi.json"),
    ]
    assert [r.status_code for r in answers] == [200, 401, 404, 422, 200, 200]
    for response in answers:
        assert response.headers.get_list("x-content-type-options") == ["nosniff"]
        assert policy_of(response) == [API_POLICY.decode()]


async def test_a_routes_own_policy_is_kept_and_not_doubled(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    assert page.status_code == 200
    assert policy_of(page) == [CSP]
    assert page.headers.get_list("x-content-type-options") == ["nosniff"]
