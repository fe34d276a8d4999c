"""Liveness and readiness, including a database that goes away and comes back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.engine import make_url

from backend.app import create_app
from backend.config import Settings
from chat_shell.sandbox import BubblewrapSandbox
from tests.support.accounts import Account
from tests.support.lifespan import running
from tests.support.proxy import TcpProxy
from tests.support.sandbox import require_sandbox
from tests.support.wait import eventually


async def test_healthz_and_readyz(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert {k: body[k] for k in ("status", "checks")} == {
        "status": "ok",
        "checks": {"database": {"ok": True}},
    }
    assert body["details"]["sandbox"]["engine"] == "bubblewrap"


async def test_readyz_and_metrics_report_a_sandbox_that_works(
    app: FastAPI, client: httpx.AsyncClient, admin: Account
) -> None:
    require_sandbox(await app.state.sandbox.availability())
    sandbox = (await client.get("/readyz")).json()["details"]["sandbox"]
    metrics = (await client.get("/api/v1/metrics", headers=admin.headers)).json()

    assert sandbox["available"] is True and sandbox["reason"] is None
    assert "python3" in sandbox["interpreters"]
    assert sandbox["user_skills"] is False
    assert metrics["sandbox"] == sandbox


async def test_a_missing_sandbox_is_reported_and_readiness_holds(
    app: FastAPI, client: httpx.AsyncClient, admin: Account, tmp_path: Path
) -> None:
    app.state.sandbox.close()
    app.state.sandbox = BubblewrapSandbox(bwrap=str(tmp_path / "no-bwrap"), state_dir=tmp_path)
    ready = await client.get("/readyz")
    metrics = (await client.get("/api/v1/metrics", headers=admin.headers)).json()

    assert ready.status_code == 200 and ready.json()["status"] == "ok"
    sandbox = ready.json()["details"]["sandbox"]
    assert sandbox["available"] is False
    assert "bubblewrap" in sandbox["reason"]
    assert metrics["sandbox"] == sandbox


async def test_the_user_skills_setting_is_reported(settings: Settings) -> None:
    app = create_app(settings.model_copy(update={"sandbox_user_skills": True}))
    async with running(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            body = (await client.get("/readyz")).json()
    assert body["details"]["sandbox"]["user_skills"] is True


async def test_openapi_is_served(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert "/api/v1/me" in schema["paths"]
    assert (await client.get("/docs")).status_code == 200


@pytest.fixture
async def proxied_postgres(
    database_url: str, db_backend: str
) -> AsyncIterator[tuple[str, TcpProxy]]:
    if db_backend != "postgresql":
        pytest.fail("this fixture is for PostgreSQL only")
    url = make_url(database_url)
    socket_dir = url.query.get("host")
    assert isinstance(socket_dir, str), "the test PostgreSQL listens on a unix socket"
    async with TcpProxy(unix_path=f"{socket_dir}/.s.PGSQL.{url.port or 5432}") as proxy:
        proxied = url.set(host="127.0.0.1", port=proxy.port, query={})
        yield proxied.render_as_string(hide_password=False), proxy


@pytest.mark.parametrize("db_backend", ["postgresql"], indirect=True)
async def test_readyz_follows_the_database(
    proxied_postgres: tuple[str, TcpProxy], settings: Settings, alice: Account
) -> None:
    url, proxy = proxied_postgres
    app = create_app(settings.model_copy(update={"database_url": url}))
    async with running(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            assert (await client.get("/readyz")).status_code == 200
            await proxy.stop()
            down = await client.get("/readyz")
            assert down.status_code == 503
            assert down.json()["checks"]["database"]["ok"] is False
            assert "127.0.0.1" not in down.text  # no connection details leak
            outage = await client.get("/api/v1/me", headers=alice.headers)
            assert outage.status_code == 503  # an outage is not a server bug (500)
            assert outage.json()["error"]["code"] == "dependency_unavailable"
            await proxy.start()

            async def ready() -> bool:
                return (await client.get("/readyz")).status_code == 200

            assert await eventually(ready)


async def test_readyz_checks_redis_when_configured(settings: Settings, redis_url: str) -> None:
    for url, status in ((redis_url, 200), ("redis://127.0.0.1:1/0", 503)):
        app = create_app(settings.model_copy(update={"redis_url": url}))
        async with running(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                response = await client.get("/readyz")
        assert response.status_code == status
        assert response.json()["checks"]["redis"]["ok"] is (status == 200)
