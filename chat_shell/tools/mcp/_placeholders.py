"""`${{dotted.path}}` placeholders in MCP server configs.

Substituted in `command`, `args`, `url`, header values and env values from a context mapping
such as `{"user": {"id": 7, "name": "ann"}, "conversation": {"id": "c1"}, "secrets": {...}}`.
A placeholder without a value is an error naming it: a config never reaches a server with a
literal `${{...}}` left in it.

Values are a tenant's (a name, a secret) even in a config an admin wrote, so they are data,
never syntax: a value in a URL is percent-encoded but for `:` (`a@evil.example/x` cannot move a
trusted URL to another host) unless it is the whole URL (then the egress policy judges the
address); header values may not hold control characters (CR/LF would be a header of their
own); no value holds a NUL byte; and stdio env values may not spell a `${VAR}` reference, alone
or with their neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from chat_shell.tools.mcp._config import McpServerConfig
from chat_shell.tools.mcp._errors import McpPlaceholderError, McpPlaceholderUnresolvedError

KNOWN_PLACEHOLDER_ROOTS = frozenset({"user", "conversation", "secrets"})

_SEGMENT = r"[A-Za-z_][A-Za-z0-9_-]*"
_PLACEHOLDER = re.compile(r"\$\{\{\s*(" + _SEGMENT + r"(?:\." + _SEGMENT + r")*)\s*\}\}")
_OPENER = "${{"
_ENV_REFERENCE = "${"  # what the adapters expand in stdio env values
_HEADER_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a tab is allowed


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
        whole = _PLACEHOLDER.fullmatch(text.strip()) is not None
        result = _PLACEHOLDER.sub(lambda m: value(field, m.group(1), whole), text)
        if field.startswith("env.") and result.count(_ENV_REFERENCE) > _literal(text).count(
            _ENV_REFERENCE
        ):  # values joined with each other or the text around them into `${VAR}`
            raise McpPlaceholderError(
                f"the values substituted in {field} may not form a '${{VAR}}' reference",
                details={"field": field},
            )
        return result

    def value(field: str, path: str, whole: bool) -> str:
        resolved = resolve_placeholder(path, context)
        refused = _refusal(field, resolved)
        if refused is not None:
            raise McpPlaceholderError(
                f"the value of ${{{{{path}}}}} may not contain {refused} in {field}",
                details={"placeholder": path, "field": field},
            )
        if field == "url" and not whole:  # `:` kept: `host:port` from one secret still works
            return quote(resolved, safe=":")
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


def _literal(text: str) -> str:
    return _PLACEHOLDER.sub("", text)


def _refusal(field: str, value: str) -> str | None:
    """What a substituted value may not hold in this field (None: it is fine)."""
    if "\x00" in value:
        return "a NUL byte"
    if field.startswith("headers.") and _HEADER_CONTROL.search(value):
        return "control characters"
    if field.startswith("env.") and _ENV_REFERENCE in value:
        return "'${'"
    return None


def secret_values(config: McpServerConfig, context: Mapping[str, Any]) -> set[str]:
    """The secret values the config would receive, so messages can be redacted of them."""
    values: set[str] = set()
    for path in find_placeholders(config):
        if path.startswith("secrets."):
            try:
                values.add(resolve_placeholder(path, context))
            except McpPlaceholderUnresolvedError:
                continue
    # Also as messages may show them: escaped (an HTTP library's repr of a refused header)
    # and percent-encoded (a URL after substitution).
    shown = {repr(v)[1:-1] for v in values} | {quote(v, safe=":") for v in values}
    return {v for v in values | shown if v}
