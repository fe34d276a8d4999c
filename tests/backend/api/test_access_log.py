"""One access-log line per request; tokens never reach the log."""

from __future__ import annotations

import logging

import httpx
import pytest

from tests.support.accounts import Account


async def test_each_request_logs_one_line_without_secrets(
    client: httpx.AsyncClient, alice: Account, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await client.get("/api/v1/me", headers=alice.headers)
    await client.get("/api/v1/me", headers={"Authorization": "Bearer shk_wrong-secret"})
    created = await client.post("/api/v1/tokens", json={"name": "x"}, headers=alice.headers)
    access = [r.getMessage() for r in caplog.records if r.name == "skillhive.access"]
    assert access[0] == access[0].strip()
    assert access[0].startswith("GET /api/v1/me 200 ")
    assert access[0].endswith(f"user={alice.id}")
    assert access[1].startswith("GET /api/v1/me 401 ") and access[1].endswith("user=-")
    assert len(access) == 3
    everything = "\n".join(r.getMessage() for r in caplog.records)
    for secret in (alice.token, "shk_wrong-secret", created.json()["token"]):
        assert secret not in everything
