"""MCP tools for a turn: server configs, placeholder substitution, the per-turn session pool.

Typical use by the agent::

    servers = merge_mcp_servers(global_servers, ghost_servers, skill_servers)
    async with McpSessionPool(connect_timeout_s=30, call_timeout_s=60) as pool:
        tools, failures = await pool.connect(servers, context)   # failures -> events
        ...  # a skill loaded mid-turn: more_tools, more_failures = await pool.connect(...)

Rules:

- Configuration problems raise `McpError` subclasses with stable codes (`mcp_config_invalid`,
  `mcp_stdio_forbidden`, `mcp_placeholder_invalid`, `mcp_placeholder_unresolved`); the backend
  calls `parse_mcp_servers`, `check_stdio_allowed` and `validate_placeholders` on write.
- In a turn nothing raises: a server that cannot be used is an `McpFailure` (also for
  `mcp_connect_failed`, `mcp_connect_timeout`, `mcp_server_conflict`, and `egress_forbidden`
  for a tenant's server whose address the egress policy refuses), and a tool call that fails
  returns an error ToolMessage whose text starts with `[mcp_tool_timeout]`, `[mcp_tool_failed]`
  or `[mcp_server_disconnected]`. Known secret values are masked in both; an HTTP server's
  answer and URL never appear (status code only, the body goes to the log).
- Merging replaces whole entries by name (skill > Ghost > global). In a turn the global and Ghost
  servers connect in `GHOST_SCOPE` and a loaded skill's in its own scope
  (`pool.connect(servers, context, scope=skill)`), so a skill's server serves that skill's tools
  even when the Ghost has a server of the same name; the caller hides the replaced Ghost tools
  (`pool.shadowed(names)`) while the skill is active. Tool names clash -> `<server>_<tool>`.
"""

from chat_shell.tools.mcp._config import (
    McpServerConfig,
    Transport,
    check_stdio_allowed,
    merge_mcp_servers,
    parse_mcp_server,
    parse_mcp_servers,
)
from chat_shell.tools.mcp._errors import (
    McpConfigError,
    McpError,
    McpPlaceholderError,
    McpPlaceholderUnresolvedError,
    McpStdioForbiddenError,
)
from chat_shell.tools.mcp._placeholders import (
    KNOWN_PLACEHOLDER_ROOTS,
    find_placeholders,
    substitute_placeholders,
    validate_placeholders,
)
from chat_shell.tools.mcp._pool import GHOST_SCOPE, McpFailure, McpSessionPool

__all__ = [
    "GHOST_SCOPE",
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
