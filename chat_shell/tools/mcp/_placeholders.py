"""`${{dotted.path}}` placeholders in MCP server configs.

Substituted in `command`, `args`, `url`, header values and env values from a context mapping
such as `{"user": {"id": 7, "name": "ann"}, "conversation": {"id": "c1"}, "secrets": {...}}`.
A placeholder without a value is an error naming it: a config never reaches a server with a
literal `${{...}}` left in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from chat_shell.tools.mcp._config import McpServerConfig
from chat_shell.tools.mcp._errors import McpPlaceholderError, McpPlaceholderUnresolvedError

KNOWN_PLACEHOLDER_ROOTS = frozenset({"user", "conversation", "secrets"})

_SEGMENT = r"[A-Za-z_][A-Za-z0-9_-]*"
_PLACEHOLDER = re.compile(r"\$\{\{\s*(" + _SEGMENT + r"(?:\." + _SEGMENT + r")*)\s*\}\}")
_OPENER = "${{"


def _fields(config: McpServerConfig) -> Iterator[tuple[str, str]]:
    """(field, text) for every string that may hold placeholders."""
    if config.command is not None:
        yield "command", config.command
    if config.url is not None:
        yield "url", config.url
    yield from ((f"args[{i}]", a) for i, a in enumerate(config.args))
    yield from ((f"headers.{k}", v) for k, v in config.headers.items())
    yield from ((f"env.{k}", v) for k, v in config.env.items())


def _check_syntax(field: str, text: str) -> None:
    # Whatever remains after removing well-formed placeholders must not look like one.
    # The message names the field only: the text may hold a credential.
    if _OPENER in _PLACEHOLDER.sub("", text):
        raise McpPlaceholderError(
            f"malformed placeholder in {field}: expected ${{{{dotted.path}}}}",
            details={"field": field},
        )


def find_placeholders(config: McpServerConfig) -> set[str]:
    """The dotted paths of all well-formed placeholders in the config."""
    return {m.group(1) for _, text in _fields(config) for m in _PLACEHOLDER.finditer(text)}


def url_takes_tenant_values(config: McpServerConfig) -> bool:
    """Whether the URL takes a value a tenant controls (`user.*`, `conversation.*`,
    `secrets.*`): then even a trusted config's address is the tenant's choice."""
    found = _PLACEHOLDER.finditer(config.url or "")
    return any(m.group(1).partition(".")[0] in KNOWN_PLACEHOLDER_ROOTS for m in found)


def validate_placeholders(
    config: McpServerConfig, *, known_roots: frozenset[str] = KNOWN_PLACEHOLDER_ROOTS
) -> None:
    """Write-time check: every placeholder is well formed and of a known form (`user.*`, ...)."""
    for field, text in _fields(config):
        _check_syntax(field, text)
    for path in sorted(find_placeholders(config)):
        root, _, rest = path.partition(".")
        if root not in known_roots or not rest:
            raise McpPlaceholderError(
                f"unknown placeholder ${{{{{path}}}}}: expected one of "
                + ", ".join(f"{r}.*" for r in sorted(known_roots)),
                details={"placeholder": path},
            )


def resolve_placeholder(path: str, context: Mapping[str, Any]) -> str:
    """The value of one dotted path, or `McpPlaceholderUnresolvedError` naming it."""
    node: Any = context
    for segment in path.split("."):
        if not isinstance(node, Mapping) or segment not in node:
            node = None
            break
        node = node[segment]
    if node is None or isinstance(node, Mapping | list | tuple | set):
        raise McpPlaceholderUnresolvedError(
            f"placeholder ${{{{{path}}}}} has no value", details={"placeholder": path}
        )
    return str(node)


def substitute_placeholders(config: McpServerConfig, context: Mapping[str, Any]) -> McpServerConfig:
    """A copy of `config` with every placeholder replaced; the result is validated again."""

    def sub(field: str, text: str) -> str:
        _check_syntax(field, text)
        return _PLACEHOLDER.sub(lambda m: value(field, m.group(1)), text)

    def value(field: str, path: str) -> str:
        resolved = resolve_placeholder(path, context)
        # The adapters expand `${VAR}` in stdio env values from the worker's environment: a
        # user-controlled value (a name, a secret) must not smuggle such a reference in.
        if field.startswith("env.") and "${" in resolved:
            raise McpPlaceholderError(
                f"the value of ${{{{{path}}}}} may not contain '${{' in {field}",
                details={"placeholder": path, "field": field},
            )
        return resolved

    data = config.model_dump()
    data.update(
        command=sub("command", config.command) if config.command is not None else None,
        url=sub("url", config.url) if config.url is not None else None,
        args=[sub(f"args[{i}]", a) for i, a in enumerate(config.args)],
        headers={k: sub(f"headers.{k}", v) for k, v in config.headers.items()},
        env={k: sub(f"env.{k}", v) for k, v in config.env.items()},
    )
    return McpServerConfig.model_validate(data)


def secret_values(config: McpServerConfig, context: Mapping[str, Any]) -> set[str]:
    """The secret values the config would receive, so messages can be redacted of them."""
    values: set[str] = set()
    for path in find_placeholders(config):
        if path.startswith("secrets."):
            try:
                values.add(resolve_placeholder(path, context))
            except McpPlaceholderUnresolvedError:
                continue
    return {v for v in values if v}
