"""Every entry point of a tenant-chosen address, end to end, against a real listener.

The Ghosts name `localhost`, which passes the write-time check: the connect-time check must
refuse it because it resolves to loopback. By default the listener receives no connection at
all; with an operator's allow entry it does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import ghost_crd, parse_sse
from tests.support.listener import Listener, http_response
from tests.support.skills import upload

pytestmark = pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)

OFFLINE = {"name": "offline"}


@pytest.fixture(params=["default", "allowed"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings(database_url: str, tmp_path: Path, mode: str) -> Settings:
    allow = ["127.0.0.1", "::1"] if mode == "allowed" else []
    return Settings(database_url=database_url, data_dir=tmp_path / "data", egress_allow=allow)


async def chat(
    client: httpx.AsyncClient, account: Account, spec: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """Write Ghost `g` with `spec`, open a conversation and stream one turn's events."""
    model = spec.pop("model", OFFLINE)
    body = ghost_crd("g", model=model, **spec)
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
    assert created.status_code == 201, created.text
    conversation = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/g"}, headers=account.headers
    )
    cid = conversation.json()["id"]
    async with client.stream(
        "POST",
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "hello"},
        headers={**account.headers, "Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200
        return parse_sse((await response.aread()).decode())


def mcp_errors(events: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    return {data["server"]: data["code"] for kind, data in events if kind == "mcp_error"}


async def test_a_ghosts_model_endpoint(
    client: httpx.AsyncClient, alice: Account, mode: str
) -> None:
    async with Listener(http_response(500, "no")) as listener:
        model = {"name": "m", "baseUrl": listener.url("/v1", host="localhost")}
        events = await chat(client, alice, {"model": model})
    kind, data = events[-1]
    assert kind == "error"
    if mode == "default":
        assert data["code"] == "egress_forbidden"
        assert listener.connections == 0
    else:
        assert data["code"] == "model_error"
        assert listener.connections >= 1


@pytest.mark.parametrize(("transport", "path"), [("sse", "/sse"), ("streamable-http", "/mcp")])
async def test_a_ghosts_mcp_server(
    client: httpx.AsyncClient, alice: Account, mode: str, transport: str, path: str
) -> None:
    async with Listener(http_response(404, "")) as listener:
        servers = {"search": {"type": transport, "url": listener.url(path, host="localhost")}}
        events = await chat(client, alice, {"mcpServers": servers})
    assert events[-1][0] == "done"  # one server's failure does not end the turn
    if mode == "default":
        assert mcp_errors(events) == {"search": "egress_forbidden"}
        assert listener.connections == 0
    else:
        assert mcp_errors(events) == {"search": "mcp_connect_failed"}
        assert listener.connections >= 1


async def test_a_user_skills_mcp_server(
    client: httpx.AsyncClient, alice: Account, mode: str
) -> None:
    async with Listener(http_response(404, "")) as listener:
        url = listener.url("/mcp", host="localhost")
        package = zips.skill(
            "remote", extra=f"mcpServers:\n  lookup: {{type: http, url: '{url}'}}\n"
        )
        assert (await upload(client, alice.headers, package)).status_code == 201
        events = await chat(client, alice, {"skills": ["remote"], "preload_skills": ["remote"]})
    if mode == "default":
        assert mcp_errors(events) == {"lookup": "egress_forbidden"}
        assert listener.connections == 0
    else:
        assert mcp_errors(events) == {"lookup": "mcp_connect_failed"}
        assert listener.connections >= 1


@pytest.mark.parametrize("mode", ["allowed"], indirect=True)
async def test_an_upstream_error_body_is_not_in_the_stored_answer(
    client: httpx.AsyncClient, alice: Account
) -> None:
    secret = '{"error": {"message": "db password hunter2 at 10.1.2.3"}}'
    async with Listener(http_response(400, secret)) as listener:
        model = {"name": "m", "baseUrl": listener.url("/v1?key=tenant-url")}
        events = await chat(client, alice, {"model": model})
    kind, data = events[-1]
    assert kind == "error"
    error = data["reply"]["error"]
    assert error == {"code": "model_error", "message": "the model endpoint answered HTTP 400"}
    assert "hunter2" not in str(events)
