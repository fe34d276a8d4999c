"""Secret values never come back from the Ghost API, nor reach its errors or logs."""

from __future__ import annotations

import logging

import httpx
import pytest
import yaml

from tests.support.accounts import Account
from tests.support.ghosts import create, ghost, own

VALUE = "sk-live-VALUE-0123456789"
LITERAL = "sk-literal-IN-A-HEADER-42"


async def test_secret_values_never_appear_in_responses_errors_or_logs(
    client: httpx.AsyncClient, alice: Account, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    put = await client.put("/api/v1/secrets/API_KEY", json={"value": VALUE}, headers=alice.headers)
    assert put.status_code == 201
    servers = {"docs": {"url": "https://mcp.example.com", "headers": {"A": "${{secrets.API_KEY}}"}}}
    body = ghost("g", model={"apiKeySecret": "API_KEY"}, mcpServers=servers)

    responses = [
        await create(client, alice.headers, body),
        await client.get(f"{own()}/g", headers=alice.headers),
        await client.get(own(), headers=alice.headers),
        await client.put(f"{own()}/g", json=ghost("g", **body["spec"]), headers=alice.headers),
        await client.post("/api/v1/apply", json=[{**body, "kind": "Ghost"}], headers=alice.headers),
        await client.post(
            "/api/v1/apply",
            content=yaml.safe_dump({**body, "kind": "Ghost"}).encode(),
            headers={**alice.headers, "Content-Type": "application/yaml"},
        ),
    ]
    assert [r.status_code for r in responses] == [201, 200, 200, 200, 200, 200]
    stored = responses[1].json()["spec"]
    assert stored["mcpServers"]["docs"]["headers"] == {"A": "${{secrets.API_KEY}}"}

    # errors about a server name only its fields, never the values around them
    leaky = {"docs": {"url": "https://x.example", "headers": {"A": f"Bearer {LITERAL} ${{{{ x"}}}
    refused = [
        await create(client, alice.headers, ghost("h", mcpServers=leaky)),
        await create(client, alice.headers, ghost("h", model={"apiKeySecret": "OTHER"})),
        await create(
            client,
            alice.headers,
            ghost(
                "h", mcpServers={"s": {"command": "run", "args": [LITERAL], "env": {"K": VALUE}}}
            ),
        ),
        await create(client, alice.headers, ghost("h", mcpServers={"s": {"url": 5, "x": VALUE}})),
    ]
    assert [r.json()["error"]["code"] for r in refused] == [
        "mcp_placeholder_invalid",
        "unknown_secrets",
        "mcp_stdio_forbidden",
        "mcp_config_invalid",
    ]
    for response in responses + refused:
        assert VALUE not in response.text
        assert LITERAL not in response.text
    assert caplog.records  # the access log did run
    assert VALUE not in caplog.text and LITERAL not in caplog.text
