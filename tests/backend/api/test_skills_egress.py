"""A user's skill may not bring MCP servers at literal refused addresses: 422 on upload."""

from __future__ import annotations

import httpx
import pytest

from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.skills import upload

pytestmark = pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)


def skill_with_servers(servers: str) -> bytes:
    return zips.skill("remote", extra=f"mcpServers:\n{servers}")


async def test_a_user_skill_with_a_refused_mcp_address_is_422(
    client: httpx.AsyncClient, alice: Account
) -> None:
    servers = (
        "  docs: {type: sse, url: 'https://mcp.example.com/sse'}\n"
        "  meta: {type: http, url: 'http://169.254.169.254/mcp'}\n"
        "  named: {type: http, url: 'http://localhost:9/mcp'}\n"
        "  dotted: {type: http, url: 'http://127.0.0.1.:8121/'}\n"
        "  user: {type: http, url: 'http://${{user.name}}@127.0.0.1:8121/'}\n"
        "  host: {type: http, url: 'http://${{secrets.HOST}}/mcp'}\n"
    )
    response = await upload(client, alice.headers, skill_with_servers(servers))
    assert_error(response, 422, "egress_forbidden")
    assert response.json()["error"]["details"]["servers"] == ["meta", "dotted", "user"]
    listed = await client.get("/api/v1/namespaces/dev/skills", headers=alice.headers)
    assert listed.json()["items"] == []


async def test_a_public_skill_is_written_by_an_admin_and_trusted(
    client: httpx.AsyncClient, admin: Account
) -> None:
    servers = "  ops: {type: http, url: 'http://10.0.0.7/mcp'}\n"
    response = await client.post(
        "/api/v1/public/skills",
        files={"file": ("s.zip", skill_with_servers(servers))},
        headers=admin.headers,
    )
    assert response.status_code == 201, response.text
