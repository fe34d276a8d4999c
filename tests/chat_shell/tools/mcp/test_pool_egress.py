"""MCP servers a tenant chose connect only where the egress policy allows; answers stay in
the log. Real listeners on loopback count the connections that reach them."""

from __future__ import annotations

import logging

import pytest

from chat_shell.net import EgressPolicy
from chat_shell.tools.mcp import McpServerConfig, McpSessionPool, parse_mcp_server
from tests.support.listener import Listener, http_response
from tests.support.mcp_pool import codes, loopback_pool

TRANSPORTS = {"sse": "/sse", "http": "/mcp"}


def server(transport: str, url: str, *, trusted: bool = False) -> McpServerConfig:
    return parse_mcp_server({"type": transport, "url": url, "timeout": 10}, trusted=trusted)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_by_default_a_tenants_server_on_loopback_gets_no_connection(
    transport: str, host: str
) -> None:
    async with Listener() as listener, McpSessionPool() as pool:
        mine = server(transport, listener.url(TRANSPORTS[transport], host=host))
        tools, failures = await pool.connect({"mine": mine}, {})
    assert tools == [] and codes(failures) == {"mine": "egress_forbidden"}
    assert "'mine'" in failures[0].message and str(listener.port) not in failures[0].message
    assert listener.connections == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_with_an_allow_entry_the_server_is_connected_to(transport: str) -> None:
    async with Listener(http_response(404, "")) as listener, loopback_pool() as pool:
        mine = server(transport, listener.url(TRANSPORTS[transport]))
        _, failures = await pool.connect({"mine": mine}, {})
    assert codes(failures) == {"mine": "mcp_connect_failed"}  # it is no MCP server
    assert listener.connections >= 1


async def test_an_operators_server_bypasses_the_policy() -> None:
    async with Listener(http_response(404, "")) as listener, McpSessionPool() as pool:
        _, failures = await pool.connect({"ops": server("http", listener.url(), trusted=True)}, {})
    assert codes(failures) == {"ops": "mcp_connect_failed"}
    assert listener.connections >= 1


async def test_a_trusted_url_built_from_a_tenants_secret_is_checked() -> None:
    async with Listener() as listener, McpSessionPool() as pool:
        config = server("http", "http://${{secrets.HOST}}/mcp", trusted=True)
        context = {"secrets": {"HOST": f"127.0.0.1:{listener.port}"}}
        _, failures = await pool.connect({"admins": config}, context)
    assert codes(failures) == {"admins": "egress_forbidden"}
    assert listener.connections == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_upstream_error_body_reaches_the_log_not_the_failure(
    transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "internal service: password=hunter2"
    with caplog.at_level(logging.WARNING):
        async with Listener(http_response(400, secret)) as listener, loopback_pool() as pool:
            mine = server(transport, listener.url(TRANSPORTS[transport] + "?key=url-secret"))
            _, failures = await pool.connect({"mine": mine}, {})
    (failure,) = failures
    assert failure.message == "MCP server 'mine' answered HTTP 400"
    assert "hunter2" in caplog.text


async def test_the_policy_given_to_the_pool_is_the_one_applied() -> None:
    async with Listener(http_response(404, "")) as listener:
        policy = EgressPolicy(allow=("127.0.0.0/8",), deny=("127.0.0.1",))
        async with McpSessionPool(egress=policy) as pool:
            _, failures = await pool.connect({"mine": server("http", listener.url())}, {})
    assert codes(failures) == {"mine": "egress_forbidden"}
    assert listener.connections == 0


async def test_a_secret_echoed_in_an_error_body_is_masked_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = "s3cr3t-token-value"
    context = {"secrets": {"TOKEN": token}}
    with caplog.at_level(logging.WARNING):
        async with Listener(http_response(401, f"bad token {token}")) as listener:
            config = parse_mcp_server(
                {"url": listener.url("/mcp"), "headers": {"A": "${{secrets.TOKEN}}"}},
                trusted=False,
            )
            async with loopback_pool() as pool:
                _, failures = await pool.connect({"mine": config}, context)
    assert failures[0].message == "MCP server 'mine' answered HTTP 401"
    assert "bad token ***" in caplog.text and token not in caplog.text
