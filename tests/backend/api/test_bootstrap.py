"""First-start admin bootstrap from SKILLHIVE_BOOTSTRAP_ADMIN_TOKEN."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from backend.app import create_app
from backend.config import Settings
from tests.support.lifespan import running

TOKEN = "bootstrap-" + "x" * 40


async def test_bootstrap_creates_an_admin_once(settings: Settings) -> None:
    configured = settings.model_copy(update={"bootstrap_admin_token": SecretStr(TOKEN)})
    for _ in range(2):  # a restart does not create a second admin or fail
        app = create_app(configured)
        async with running(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                me = await client.get("/api/v1/me", headers={"Authorization": f"Bearer {TOKEN}"})
                assert me.status_code == 200
                assert me.json()["role"] == "admin"
                users = await client.get(
                    "/api/v1/users", headers={"Authorization": f"Bearer {TOKEN}"}
                )
                assert [u["name"] for u in users.json()["items"]] == ["admin"]


async def test_short_bootstrap_token_refuses_to_start(settings: Settings) -> None:
    configured = settings.model_copy(update={"bootstrap_admin_token": SecretStr("short")})
    with pytest.raises(RuntimeError, match="at least 32"):
        async with running(create_app(configured)):
            pass
