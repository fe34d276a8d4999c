"""A plugin's `.mcp.json` as Skillhive MCP servers for its skills.

Claude Code's `${VAR}` (and `${VAR:-default}`) references become `${{secrets.VAR}}`, so each user
supplies their own values as secrets; the import answer lists them. Keys the engine does not know
(`oauth`, `cwd`, ...) are dropped with a warning, a server without an endpoint (an empty `url`
placeholder in a template) is skipped with a warning, and a name the engine would refuse is made
plain. What remains is checked by the same rules as a Ghost's servers (`check_mcp_servers`):
stdio servers only in public (admin) imports, placeholders well formed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from backend.crd.skill import McpServer, SkillWarning
from backend.ghosts.validation import SERVER_NAME, check_mcp_servers
from backend.secrets.service import NAME_RE as SECRET_NAME

KEPT_KEYS = ("type", "transport", "url", "command", "args", "env", "headers", "timeout")
# `${VAR}` or `${VAR:-default}`, but not `${{...}}` (already Skillhive's syntax).
_VARIABLE = re.compile(r"\$\{(?!\{)([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")
PLUGIN_ROOT_VARIABLE = "CLAUDE_PLUGIN_ROOT"  # a path on the user's machine: not a secret


@dataclass
class PluginServers:
    servers: dict[str, McpServer] = field(default_factory=dict)
    secrets: set[str] = field(default_factory=set)
    warnings: list[SkillWarning] = field(default_factory=list)


def _warn(found: PluginServers, code: str, message: str) -> None:
    found.warnings.append(SkillWarning(code=code, message=message))


def _convert(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, str):

        def secret(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == PLUGIN_ROOT_VARIABLE or not SECRET_NAME.fullmatch(name):
                return match.group(0)
            secrets.add(name)
            return f"${{{{secrets.{name}}}}}"

        return _VARIABLE.sub(secret, value)
    if isinstance(value, list):
        return [_convert(v, secrets) for v in value]
    if isinstance(value, dict):
        return {str(k): _convert(v, secrets) for k, v in value.items()}
    return value


def _plain_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-_.")[:60] or "server"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def plugin_servers(raw: Any, *, public: bool) -> PluginServers:
    """The servers of a `.mcp.json` document (`{"mcpServers": {...}}` or the bare mapping).

    Raises `InvalidRequest` (`mcp_stdio_forbidden`, `mcp_config_invalid`, ...) when a kept
    server breaks a rule: the plugin is refused rather than imported without it.
    """
    found = PluginServers()
    servers = raw.get("mcpServers", raw) if isinstance(raw, dict) else None
    if not isinstance(servers, dict):
        _warn(found, "mcp_config_ignored", ".mcp.json holds no server mapping; ignored")
        return found
    for name, config in servers.items():
        if not isinstance(config, dict):
            _warn(found, "mcp_server_skipped", f"MCP server {name!r} is not an object; skipped")
            continue
        kept = {k: config[k] for k in KEPT_KEYS if k in config and config[k] not in (None, "")}
        dropped = sorted(k for k in config if k not in KEPT_KEYS)
        if dropped:
            _warn(
                found,
                "mcp_field_dropped",
                f"MCP server {name!r}: {', '.join(dropped)} not supported; dropped",
            )
        if not kept.get("url") and not kept.get("command"):
            _warn(found, "mcp_server_skipped", f"MCP server {name!r} has no url or command")
            continue
        plain = name if SERVER_NAME.fullmatch(name) else _plain_name(name, set(found.servers))
        if plain != name:
            _warn(found, "mcp_server_renamed", f"MCP server {name!r} is named {plain!r}")
        found.servers[plain] = McpServer.model_validate(_convert(kept, found.secrets))
    check_mcp_servers(found.servers, trusted=public)
    return found
