"""Fixtures: real MCP servers (installed once per machine, see `servers.py`) and configs."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from chat_shell.tools.mcp import McpServerConfig, parse_mcp_server
from tests.chat_shell.tools.mcp import servers


@pytest.fixture(scope="session")
def time_server() -> McpServerConfig:
    """`mcp-server-time` over stdio, trusted (as in server configuration)."""
    exe = servers.install_time_server()
    return parse_mcp_server({"command": str(exe), "args": ["--local-timezone=UTC"]}, trusted=True)


@pytest.fixture(scope="session")
def everything_js() -> str:
    return str(servers.install_everything_server())


@pytest.fixture(scope="session")
def everything_http(everything_js: str) -> Iterator[McpServerConfig]:
    cmd = ["node", everything_js, "streamableHttp"]
    with servers.http_server(cmd, servers.free_port()) as base:
        yield parse_mcp_server({"type": "streamableHttp", "url": f"{base}/mcp"}, trusted=False)


@pytest.fixture(scope="session")
def everything_sse(everything_js: str) -> Iterator[McpServerConfig]:
    cmd = ["node", everything_js, "sse"]
    with servers.http_server(cmd, servers.free_port()) as base:
        yield parse_mcp_server({"type": "sse", "url": f"{base}/sse"}, trusted=False)


@pytest.fixture(scope="session")
def fixture_http() -> Iterator[McpServerConfig]:
    """The fixture server over streamable HTTP (its `get_header` tool sees request headers)."""
    port = servers.free_port()
    cmd = [sys.executable, str(servers.FIXTURE_SERVER), "http", str(port)]
    with servers.http_server(cmd, port) as base:
        yield parse_mcp_server({"type": "http", "url": f"{base}/mcp"}, trusted=False)


@pytest.fixture
def fixture_stdio() -> McpServerConfig:
    """The fixture server over stdio, run by this venv's python (it needs `mcp` 1.x)."""
    return parse_mcp_server(
        {"command": sys.executable, "args": [str(servers.FIXTURE_SERVER), "stdio"]}, trusted=True
    )
