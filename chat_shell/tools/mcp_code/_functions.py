"""The turn's MCP tools as Python functions: names, one-line descriptions, bounded search.

Everything here comes from MCP servers (tenant-chosen ones included), so names are made into
plain identifiers and every text the model sees is cut to a bound.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

SEARCH_LIMIT = 10  # names and one-liners a search returns
DETAIL_LIMIT = 3  # schemas a search returns with `detail` (an exact name always gets its own)
DESCRIPTION_CHARS = 160
SCHEMA_CHARS = 4000

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")
_WORD = re.compile(r"[a-z0-9]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, eq=False)  # identity: two servers may offer equal tools
class McpFunction:
    """One MCP tool as the generated module exposes it."""

    function: str  # the Python name in `mcp_tools`
    tool: BaseTool  # the turn's tool (its MCP session, timeouts, masking)
    server: str

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def summary(self) -> str:
        line = (self.tool.description or "").strip().splitlines()
        text = line[0].strip() if line else ""
        return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"

    @property
    def schema(self) -> dict[str, Any]:
        schema = self.tool.args_schema  # an MCP tool's: the server's input schema
        if isinstance(schema, dict):
            return schema
        parameters: dict[str, Any] = convert_to_openai_tool(self.tool)["function"]["parameters"]
        return parameters

    def parameters(self) -> list[tuple[str, bool]] | None:
        """(name, required) of each argument, or None when one is not a usable identifier."""
        schema = self.schema
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        if not isinstance(props, dict):
            return None
        names = list(props)
        if not all(isinstance(n, str) and _usable(n) for n in names):
            return None
        return [(n, n in required) for n in names]

    def brief(self) -> dict[str, Any]:
        entry = {"function": self.function, "server": self.server, "description": self.summary}
        if self.function != self.name:
            entry["tool"] = self.name
        return entry

    def detailed(self) -> dict[str, Any]:
        schema = json.dumps(self.schema, ensure_ascii=False)
        if len(schema) > SCHEMA_CHARS:
            return {**self.brief(), "input_schema_truncated": schema[:SCHEMA_CHARS]}
        return {**self.brief(), "input_schema": self.schema}


def _usable(name: str) -> bool:
    # A leading underscore could shadow the module's own helpers inside the function.
    return bool(_IDENT.fullmatch(name)) and not keyword.iskeyword(name) and name[0] != "_"


def python_name(tool_name: str) -> str:
    name = _NOT_IDENT.sub("_", tool_name) or "tool"
    if name[0].isdigit() or keyword.iskeyword(name) or name.startswith("_"):
        name = f"t_{name.lstrip('_')}"
    return name


def as_functions(tools: Iterable[tuple[BaseTool, str]]) -> list[McpFunction]:
    """Each (tool, server) as a function with a unique Python name (clashes get a suffix)."""
    taken = {"call_tool", "McpToolError", "TOOLS"}
    functions: list[McpFunction] = []
    for tool, server in tools:
        base = python_name(tool.name)
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        functions.append(McpFunction(name, tool, server))
    return functions


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ").replace("-", " ")))


def search(
    functions: Sequence[McpFunction], query: str, *, detail: bool = False
) -> list[dict[str, Any]]:
    """The best matches for `query`: names and one-liners; schemas for an exact name (of the
    function or the tool) and, with `detail`, for the first few."""
    wanted = query.strip()
    exact = [f for f in functions if wanted in (f.function, f.name)]
    words = _words(wanted)
    scored: list[tuple[float, int, McpFunction]] = []
    for index, function in enumerate(functions):
        if function in exact:
            continue
        names = _words(function.function) | _words(function.server)
        described = _words(function.tool.description or "")
        score = 3 * len(words & names) + len(words & described)
        if score or not words:
            scored.append((-score, index, function))
    ranked = exact + [f for _, _, f in sorted(scored, key=lambda s: (s[0], s[1]))]
    ranked = ranked[: max(SEARCH_LIMIT, len(exact))]
    schemas = len(exact) + (DETAIL_LIMIT if detail else 0)
    return [f.detailed() if i < schemas else f.brief() for i, f in enumerate(ranked)]
