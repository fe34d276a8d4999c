"""A CRD's MCP servers as the engine takes them, and the user secrets they name.

The CRD keeps each server as written (`backend.crd.skill.McpServer`, placeholders verbatim);
the engine takes `chat_shell.McpServerConfig`, trust-marked by the caller. Secret references are
what chat_shell's one placeholder parser finds in the fields it substitutes.
"""

from __future__ import annotations

from collections.abc import Mapping

from backend.crd.skill import McpServer
from chat_shell import McpServerConfig, find_placeholders, parse_mcp_servers


def engine_servers(
    servers: Mapping[str, McpServer], *, trusted: bool
) -> dict[str, McpServerConfig]:
    """Parse with chat_shell's rules; `McpConfigError` (a stable code) names a bad server."""
    raw = {name: s.model_dump(mode="json", exclude_none=True) for name, s in servers.items()}
    return parse_mcp_servers(raw, trusted=trusted)


def secret_refs(config: McpServerConfig) -> frozenset[str]:
    """The names in `${{secrets.NAME}}` placeholders of one server."""
    found = (path.partition(".") for path in find_placeholders(config))
    return frozenset(rest for root, _, rest in found if root == "secrets" and rest)


def secret_names(servers: Mapping[str, McpServerConfig]) -> frozenset[str]:
    """The user secrets some server names in a placeholder."""
    return frozenset().union(*(secret_refs(c) for c in servers.values()))
