"""MCP errors and their stable codes.

Configuration problems are raised (the backend validates on write, the engine on use);
problems while connecting or calling are *reported* instead (`McpFailure`, tool error text), so
one bad server never ends a turn.
"""

from __future__ import annotations

from chat_shell.errors import ChatShellError


class McpError(ChatShellError):
    """Base of every MCP error."""

    code = "mcp_error"


class McpConfigError(McpError):
    """A server config is malformed (missing url/command, bad transport, wrong types)."""

    code = "mcp_config_invalid"


class McpStdioForbiddenError(McpError):
    """A `stdio` server came from an untrusted source (a user's Ghost or skill)."""

    code = "mcp_stdio_forbidden"


class McpPlaceholderError(McpError):
    """A `${{...}}` placeholder is malformed or of an unknown form (checked on write)."""

    code = "mcp_placeholder_invalid"


class McpPlaceholderUnresolvedError(McpError):
    """A `${{...}}` placeholder has no value in the substitution context."""

    code = "mcp_placeholder_unresolved"


# Codes of reported (not raised) failures, see `McpFailure` and the tool error text.
CONNECT_FAILED = "mcp_connect_failed"
CONNECT_TIMEOUT = "mcp_connect_timeout"
SERVER_CONFLICT = "mcp_server_conflict"
TOOL_TIMEOUT = "mcp_tool_timeout"
TOOL_FAILED = "mcp_tool_failed"
SERVER_DISCONNECTED = "mcp_server_disconnected"
EGRESS_FORBIDDEN = "egress_forbidden"  # the server's address is refused by the egress policy
