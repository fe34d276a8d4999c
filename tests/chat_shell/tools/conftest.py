"""Real MCP servers (installed once per machine, see tests/support/mcp_servers.py), shared by the
MCP pool and code-mode tests."""

from tests.support.mcp_servers import everything_http, everything_js, time_server  # noqa: F401 (fixtures)
