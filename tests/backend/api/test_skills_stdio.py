"""A user's skill may not bring a stdio MCP server (it would start a process on the worker):
422 `mcp_stdio_forbidden` on every write, as for a Ghost or a plugin; public skills may."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.marketplace import TOOLKIT_FILES, plugin_zip, post_zip
from tests.support.skills import upload, user_rows

SKILLS = "/api/v1/namespaces/dev/skills"
STDIO_SPELLINGS = [
    "  local: {command: node, args: [server.js]}\n",  # the transport inferred from `command`
    "  local: {type: stdio, command: node}\n",
    "  local: {transport: STDIO, command: node}\n",
]
STDIO = STDIO_SPELLINGS[0]


def skill_with_servers(servers: str, name: str = "local-tools") -> bytes:
    return zips.skill(name, extra=f"mcpServers:\n{servers}")


@pytest.mark.parametrize("servers", STDIO_SPELLINGS)
async def test_an_upload_and_its_dry_run_with_a_stdio_server_are_422_and_write_nothing(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, servers: str
) -> None:
    data = skill_with_servers(servers + "  docs: {type: http, url: 'https://mcp.example.com/'}\n")
    for query in ("", "?dryRun=true"):
        response = await upload(client, alice.headers, data, query=query)
        assert_error(response, 422, "mcp_stdio_forbidden")
        assert response.json()["error"]["details"]["servers"] == ["local"]
    assert await user_rows(app) == (0, 0)


async def test_a_put_bringing_a_stdio_server_is_422_and_keeps_the_skill(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await upload(client, alice.headers, zips.skill("local-tools"))).status_code == 201
    response = await client.put(
        f"{SKILLS}/local-tools",
        files={"file": ("s.zip", skill_with_servers(STDIO), "application/zip")},
        headers=alice.headers,
    )
    assert_error(response, 422, "mcp_stdio_forbidden")
    kept = await client.get(f"{SKILLS}/local-tools", headers=alice.headers)
    assert kept.json()["spec"].get("mcpServers", {}) == {}


async def test_a_public_skill_written_by_an_admin_may_keep_its_stdio_server(
    client: httpx.AsyncClient, admin: Account
) -> None:
    response = await client.post(
        "/api/v1/public/skills",
        files={"file": ("s.zip", skill_with_servers(STDIO), "application/zip")},
        headers=admin.headers,
    )
    assert response.status_code == 201, response.text
    assert list(response.json()["spec"]["mcpServers"]) == ["local"]


async def test_a_users_plugin_whose_skill_brings_its_own_stdio_server_is_refused(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    # As for a stdio server in its `.mcp.json`: the plugin is refused, not imported without it.
    md = zips.skill_md("web", "Build web pages.", extra=f"mcpServers:\n{STDIO}")
    files = {**TOOLKIT_FILES, "partner/ui-toolkit/skills/web/SKILL.md": md}
    data = plugin_zip(files, "partner/ui-toolkit/")
    assert_error(await post_zip(client, alice, data), 422, "mcp_stdio_forbidden")
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []
    public = await post_zip(client, admin, data, "/api/v1/public/plugins")
    assert public.status_code == 201, public.text
