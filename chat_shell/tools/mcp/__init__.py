"""MCP tools for a turn: server configs, placeholder substitution, and the per-turn session pool.

Typical use by the agent::

    servers = merge_mcp_servers(global_servers, ghost_servers, skill_servers)
    async with McpSessionPool(connect_timeout_s=30, call_timeout_s=60) as pool:
        tools, failures = await pool.connect(servers, context)
"""

from chat_shell.tools.mcp.config import (
    McpServerConfig,
    Transport,
    check_stdio_allowed,
    merge_mcp_servers,
    parse_mcp_server,
    parse_mcp_servers,
)
from chat_shell.tools.mcp.errors import (
    McpConfigError,
    McpError,
    McpPlaceholderError,
    McpPlaceholderUnresolvedError,
    McpStdioForbiddenError,
)
from chat_shell.tools.mcp.placeholders import (
    KNOWN_PLACEHOLDER_ROOTS,
    find_placeholders,
    substitute_placeholders,
    validate_placeholders,
)
from chat_shell.tools.mcp.pool import McpFailure, McpSessionPool

__all__ = [
    "KNOWN_PLACEHOLDER_ROOTS",
    "McpConfigError",
    "McpError",
    "McpFailure",
    "McpPlaceholderError",
    "McpPlaceholderUnresolvedError",
    "McpServerConfig",
    "McpSessionPool",
    "McpStdioForbiddenError",
    "Transport",
    "check_stdio_allowed",
    "find_placeholders",
    "merge_mcp_servers",
    "parse_mcp_server",
    "parse_mcp_servers",
    "substitute_placeholders",
    "validate_placeholders",
]
