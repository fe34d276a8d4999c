"""A skill's `allowed-tools` allowlist: which of its own tools (provider and MCP) are offered.

Unset (None) allows every tool; a list allows the tools any of its patterns names. A pattern is
a tool name or a glob over it (`get_*`), optionally qualified by the MCP server as
`server/tool`, `server:tool` or Claude Code's `mcp__server__tool`; `Name(args)` is taken as
`Name` (the argument part is a host shell's rule, meaningless for our tools).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence


def _names(tool: str, server: str | None) -> list[str]:
    names = [tool]
    if server:
        prefix = f"{server}_"
        own = tool[len(prefix) :] if tool.startswith(prefix) else tool  # renamed on a clash
        names += [own, f"{server}/{own}", f"{server}:{own}", f"mcp__{server}__{own}"]
    return names


def tool_allowed(tool: str, server: str | None, patterns: Sequence[str] | None) -> bool:
    """Whether the skill's tool `tool` (from MCP server `server`, if any) may be offered."""
    if patterns is None:
        return True
    names = _names(tool, server)
    for raw in patterns:
        pattern = raw.split("(", 1)[0].strip()
        if pattern and any(fnmatch.fnmatchcase(name, pattern) for name in names):
            return True
    return False
