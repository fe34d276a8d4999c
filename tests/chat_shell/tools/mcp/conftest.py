"""More configs of the real MCP servers of tests/support/mcp_servers.py (the shared ones are
exposed by tests/chat_shell/tools/conftest.py and tests/conftest.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from chat_shell.tools.mcp import McpServerConfig, parse_mcp_server
from tests.support import mcp_servers as servers


@pytest.fixture(scope="session")
def everything_sse(everything_js: str) -> Iterator[McpServerConfig]:
    cmd = ["node", everything_js, "sse"]
    with servers.http_server(cmd, servers.free_port()) as base:
        yield parse_mcp_server({"type": "sse", "url": f"{base}/sse"}, trusted=False)


@pytest.fixture
def fixture_stdio() -> McpServerConfig:
    """The fixture server over stdio, run by this venv's python (it needs `mcp` 1.x)."""
    return parse_mcp_server(
        {"command": sys.executable, "args": [str(servers.FIXTURE_SERVER), "stdio"]}, trusted=True
    )
