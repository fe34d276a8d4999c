"""A user's Ghost may not name a refused address: literal ones are a 422 on write."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backend.app import create_app
from backend.config import Settings
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import PUBLIC, create, ghost, ghost_rows, own
from tests.support.lifespan import running

# Egress has nothing to do with the database: one backend is enough.
pytestmark = pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)

REFUSED = [
    "http://127.0.0.1:8000/v1",
    "http://169.254.169.254/latest",
    "http://10.0.0.7/v1",
    "http://[::1]:8080/v1",
    "http://[::ffff:127.0.0.1]/v1",
    "http://2130706433/v1",
    "http://127.0.0.1.:8121/",  # an absolute name's trailing dot
    "ftp://models.example.com/v1",
]


@pytest.mark.parametrize("url", REFUSED)
async def test_a_model_endpoint_at_a_refused_address_is_422(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, url: str
) -> None:
    response = await create(client, alice.headers, ghost("g", model={"baseUrl": url}))
    assert_error(response, 422, "egress_forbidden")
    assert response.json()["error"]["details"]["fields"] == ["spec.model.baseUrl"]
    assert url not in response.text
    assert await ghost_rows(app) == 0


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_mcp_servers_at_refused_addresses_are_422_naming_them(
    client: httpx.AsyncClient, alice: Account, transport: str
) -> None:
    servers: dict[str, Any] = {
        "fine": {"type": transport, "url": "https://mcp.example.com/mcp"},
        "meta": {"type": transport, "url": "http://169.254.169.254/mcp"},
        "local": {"type": transport, "url": "http://127.0.0.1:9/mcp"},
    }
    response = await create(client, alice.headers, ghost("g", mcpServers=servers))
    assert_error(response, 422, "egress_forbidden")
    assert response.json()["error"]["details"]["servers"] == ["meta", "local"]


@pytest.mark.parametrize(
    "url",
    [
        "${{secrets.URL}}",
        "http://127.0.0.1:${{secrets.PORT}}/v1",
        "https://${{secrets.HOST}}/v1",  # a name as written: it would be resolved as the text
        "http://${{user.name}}@127.0.0.1:8121/",
    ],
)
async def test_a_model_endpoint_gets_no_placeholder_substituted_so_it_may_hold_none(
    client: httpx.AsyncClient, alice: Account, url: str
) -> None:
    response = await create(client, alice.headers, ghost("g", model={"baseUrl": url}))
    assert_error(response, 422, "invalid_field")
    assert response.json()["error"]["details"]["field"] == "spec.model.baseUrl"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1.:8121/",
        "http://${{user.name}}@127.0.0.1:8121/",
        "http://${{secrets.USER}}:${{secrets.PASSWORD}}@[::1]/mcp",
        "HTTP://127.0.0.1:8121/",
    ],
)
async def test_an_mcp_url_at_a_literal_refused_address_is_422_however_it_is_spelled(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, url: str
) -> None:
    body = ghost("g", mcpServers={"local": {"type": "streamable-http", "url": url}})
    response = await create(client, alice.headers, body)
    assert_error(response, 422, "egress_forbidden")
    assert response.json()["error"]["details"]["servers"] == ["local"]
    assert await ghost_rows(app) == 0


async def test_an_mcp_url_in_capitals_at_a_public_name_is_accepted(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = ghost("g", mcpServers={"docs": {"url": "HTTPS://MCP.Example.com/mcp"}})
    response = await create(client, alice.headers, body)
    assert response.status_code == 201, response.text


async def test_names_and_placeholders_are_left_to_connect_time(
    client: httpx.AsyncClient, alice: Account
) -> None:
    servers = {
        "named": {"url": "http://localhost:9/mcp"},
        "secret": {"url": "${{secrets.MCP_URL}}"},
        "host": {"url": "https://${{secrets.HOST}}/mcp"},
        "port": {"url": "http://127.0.0.1:${{secrets.PORT}}/mcp"},
    }
    body = ghost("g", model={"baseUrl": "http://localhost:9/v1"}, mcpServers=servers)
    await client.put("/api/v1/secrets/MCP_URL", json={"value": "x"}, headers=alice.headers)
    await client.put("/api/v1/secrets/HOST", json={"value": "x"}, headers=alice.headers)
    await client.put("/api/v1/secrets/PORT", json={"value": "x"}, headers=alice.headers)
    response = await create(client, alice.headers, body)
    assert response.status_code == 201, response.text


async def test_a_replace_and_an_apply_are_checked_too(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await create(client, alice.headers, ghost("g"))).status_code == 201
    refused = ghost("g", model={"baseUrl": "http://127.0.0.1/v1"})
    replaced = await client.put(f"{own()}/g", json=refused, headers=alice.headers)
    assert_error(replaced, 422, "egress_forbidden")
    applied = await client.post(
        "/api/v1/apply", json=[{**refused, "metadata": {"name": "h"}}], headers=alice.headers
    )
    assert_error(applied, 422, "egress_forbidden")


async def test_a_public_ghost_written_by_an_admin_is_trusted(
    client: httpx.AsyncClient, admin: Account
) -> None:
    body = ghost(
        "internal",
        model={"baseUrl": "http://10.0.0.7/v1"},
        mcpServers={"ops": {"url": "http://127.0.0.1:9/mcp"}},
    )
    assert (await create(client, admin.headers, body, base=PUBLIC)).status_code == 201


@asynccontextmanager
async def client_with(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a second app on the same database, configured by `settings`."""
    application = create_app(settings)
    async with running(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client


async def test_the_operators_allow_and_deny_apply_on_write(
    settings: Settings, alice: Account
) -> None:
    configured = settings.model_copy(
        update={
            "egress_allow": ["127.0.0.1", "10.0.0.0/8"],
            "egress_deny": ["10.9.0.0/16", "evil.example"],
        }
    )
    async with client_with(configured) as client:
        allowed = ghost("a", model={"baseUrl": "http://10.1.2.3/v1"})
        assert (await create(client, alice.headers, allowed)).status_code == 201
        for url in ("http://10.9.0.1/v1", "https://evil.example/v1", "http://169.254.169.254/"):
            response = await create(client, alice.headers, ghost("d", model={"baseUrl": url}))
            assert_error(response, 422, "egress_forbidden")
