"""The real sandbox and the real MCP servers, shared with the code mode tests."""

from tests.chat_shell.sandbox.conftest import sandbox
from tests.chat_shell.tools.mcp.conftest import everything_http, everything_js, time_server

__all__ = ["everything_http", "everything_js", "sandbox", "time_server"]
