"""Secrets: stored encrypted, names only in responses, never in logs; per-user."""

from __future__ import annotations

import logging

import httpx
import pytest
from cryptography.fernet import Fernet
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import select

from backend.app import create_app
from backend.config import Settings
from backend.db.models import Secret
from backend.secrets.cipher import SecretsKeyError
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.lifespan import running

VALUE = "sk-live-0123456789abcdef-very-secret"


async def test_secret_values_never_come_back_or_reach_the_logs(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    created = await client.put(
        "/api/v1/secrets/OPENAI_KEY", json={"value": VALUE}, headers=alice.headers
    )
    assert created.status_code == 201 and created.content == b""
    replaced = await client.put(
        "/api/v1/secrets/OPENAI_KEY", json={"value": VALUE + "2"}, headers=alice.headers
    )
    assert replaced.status_code == 204
    bad = await client.put(
        "/api/v1/secrets/not-valid!", json={"value": VALUE}, headers=alice.headers
    )
    assert_error(bad, 422, "invalid_secret_name")
    too_long = await client.put(
        "/api/v1/secrets/BIG", json={"value": VALUE * 5000}, headers=alice.headers
    )
    assert_error(too_long, 422, "invalid_request")
    listed = await client.get("/api/v1/secrets", headers=alice.headers)
    assert [s["name"] for s in listed.json()["items"]] == ["OPENAI_KEY"]

    for response in (created, replaced, bad, too_long, listed):
        assert VALUE not in response.text
    assert VALUE not in caplog.text
    async with app.state.sessionmaker() as session:
        stored = (await session.scalars(select(Secret))).one()
    assert VALUE.encode() not in stored.value_encrypted
    assert app.state.cipher.decrypt(stored.value_encrypted).decode() == VALUE + "2"


async def test_secrets_are_per_user(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    await client.put("/api/v1/secrets/TOKEN", json={"value": VALUE}, headers=alice.headers)
    assert (await client.get("/api/v1/secrets", headers=bob.headers)).json()["items"] == []
    assert_error(
        await client.delete("/api/v1/secrets/TOKEN", headers=bob.headers), 404, "secret_not_found"
    )
    assert (await client.delete("/api/v1/secrets/TOKEN", headers=alice.headers)).status_code == 204
    assert (await client.get("/api/v1/secrets", headers=alice.headers)).json()["items"] == []
    assert_error(await client.get("/api/v1/secrets"), 401, "missing_token")


async def test_production_refuses_to_start_without_a_key(settings: Settings) -> None:
    production = settings.model_copy(update={"env": "production", "secrets_key": None})
    with pytest.raises(SecretsKeyError, match="required"):
        async with running(create_app(production)):
            pass
    broken = production.model_copy(update={"secrets_key": SecretStr("not-a-key")})
    with pytest.raises(SecretsKeyError, match="not a Fernet key"):
        async with running(create_app(broken)):
            pass
    working = production.model_copy(
        update={"secrets_key": SecretStr(Fernet.generate_key().decode())}
    )
    async with running(create_app(working)):
        pass


async def test_development_key_is_generated_once_and_reused(settings: Settings) -> None:
    first, second = create_app(settings), create_app(settings)
    async with running(first):
        token = first.state.cipher.encrypt(b"x")
    async with running(second):
        assert second.state.cipher.decrypt(token) == b"x"
    assert (settings.data_dir / "secrets.key").stat().st_mode & 0o077 == 0
