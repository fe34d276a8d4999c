"""A Ghost CRD from a request body: shape, place, skills lists and MCP servers, without the DB.

Each failure is a 422 with a stable code and the offending names in `details`. Messages and
details carry names and field paths only, never input values: an MCP header may hold a
credential.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from backend.chat.mcp import secret_names, secret_refs
from backend.crd.common import parse_skill_ref
from backend.crd.ghost import Ghost
from backend.crd.skill import McpServer
from backend.egress import check_egress
from backend.errors import InvalidRequest
from backend.ghosts import PUBLIC_GHOSTS, check_user_namespace
from backend.kinds.store import Scope
from backend.secrets.service import NAME_RE as SECRET_NAME
from backend.secrets.service import check_name as check_secret_name
from chat_shell import (
    EgressPolicy,
    McpConfigError,
    McpPlaceholderError,
    McpServerConfig,
    McpStdioForbiddenError,
    check_stdio_allowed,
    parse_mcp_server,
    validate_placeholders,
)

# Server names prefix tool names (`<server>_<tool>`) and appear in events: keep them plain.
SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_MCP_LOCS = {("spec", "mcpServers"), ("spec", "mcp_servers")}
_MODE_LOCS = {("spec", "mcpToolMode"), ("spec", "mcp_tool_mode")}


@dataclass(frozen=True)
class GhostInput:
    ghost: Ghost
    secrets: frozenset[str]  # secret names it uses: model.apiKeySecret and ${{secrets.NAME}}

    @property
    def crd(self) -> dict[str, Any]:
        """The CRD to store; the store stamps resourceVersion and creationTimestamp."""
        return self.ghost.model_dump(
            mode="json",
            exclude_none=True,
            exclude={"metadata": {"resource_version", "creation_timestamp"}, "status": True},
        )


def _invalid(code: str, message: str, **details: Any) -> InvalidRequest:
    return InvalidRequest(message, code=code, details=details)


def parse_ghost(
    body: Any, scope: Scope, *, name: str | None = None, egress: EgressPolicy | None = None
) -> GhostInput:
    """The Ghost `body` describes, placed in `scope`; `name` is the URL's on PUT.

    `stdio` MCP servers start processes on the worker: they are accepted only in
    public Ghosts, which only admins write. A user's Ghost refuses them, an admin's own too.
    A user's Ghost must also keep its model endpoint and MCP urls within `egress` (default:
    the strict policy) as far as that shows on write (`backend.egress`).
    """
    if not isinstance(body, dict):
        raise _invalid("invalid_ghost", "a Ghost must be a JSON object")
    try:
        ghost = Ghost.model_validate(body)
    except ValidationError as exc:
        raise _shape_error(exc) from None
    _check_place(ghost, body["metadata"], scope, name)
    _check_skill_lists(ghost)
    trusted = scope == PUBLIC_GHOSTS
    configs = check_mcp_servers(ghost.spec.mcp_servers, trusted=trusted)
    if not trusted:
        _check_egress(ghost, configs, egress if egress is not None else EgressPolicy())
    secrets = set(secret_names(configs))
    if ghost.spec.model.api_key_secret is not None:
        check_secret_name(ghost.spec.model.api_key_secret)
        secrets.add(ghost.spec.model.api_key_secret)
    ghost.metadata.namespace = scope.namespace
    return GhostInput(ghost, frozenset(secrets))


def _shape_error(exc: ValidationError) -> InvalidRequest:
    raw = exc.errors(include_url=False, include_input=False, include_context=False)
    if all(tuple(e["loc"][:2]) in _MCP_LOCS and len(e["loc"]) > 2 for e in raw):
        # Only MCP servers are wrong: shaped like the errors of `check_mcp_servers`.
        problems = [
            {
                "server": str(e["loc"][2]),
                "field": ".".join(str(p) for p in e["loc"][3:]),
                "message": e["msg"],
            }
            for e in raw
        ]
        servers = sorted({p["server"] for p in problems})
        return _invalid(
            "mcp_config_invalid",
            f"invalid MCP server config: {', '.join(servers)}",
            servers=servers,
            errors=problems,
        )
    errors = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in raw]
    if all(e["type"] == "invalid_skill_ref" for e in raw):
        where = ".".join(str(p) for p in raw[0]["loc"])
        return _invalid(
            "invalid_skill_ref",
            f"invalid Ghost: {where}: {raw[0]['msg']} (a skill is 'name', 'plugin/skill', "
            "either optionally pinned as 'name@version')",
            errors=errors,
        )
    if all(tuple(e["loc"][:2]) in _MODE_LOCS for e in raw):
        return _invalid(
            "invalid_mcp_tool_mode",
            "invalid Ghost: spec.mcpToolMode must be 'direct' or 'code'",
            errors=errors,
        )
    where = ".".join(str(p) for p in raw[0]["loc"]) or "body"
    return _invalid("invalid_ghost", f"invalid Ghost: {where}: {raw[0]['msg']}", errors=errors)


def _check_place(ghost: Ghost, metadata: Mapping[str, Any], scope: Scope, name: str | None) -> None:
    if name is not None and ghost.metadata.name != name:
        raise _invalid(
            "name_mismatch",
            f"metadata.name is {ghost.metadata.name!r}; this URL addresses {name!r}",
            expected=name,
            found=ghost.metadata.name,
        )
    found = metadata.get("namespace")
    if found is not None and found != scope.namespace:
        raise _invalid(
            "namespace_mismatch",
            f"metadata.namespace is {found!r}; this URL addresses {scope.namespace!r}",
            expected=scope.namespace,
            found=found,
        )
    check_user_namespace(scope, "Ghosts")


def _check_skill_lists(ghost: Ghost) -> None:
    spec = ghost.spec
    skills = [parse_skill_ref(r) for r in spec.skills]
    preloads = [parse_skill_ref(r) for r in spec.preload_skills]
    lists = ([p.name for p in skills], [p.name for p in preloads])  # `a` and `a@2` are one skill
    twice = sorted({n for names in lists for n, count in Counter(names).items() if count > 1})
    if twice:
        raise _invalid("duplicate_skills", f"skills listed twice: {', '.join(twice)}", skills=twice)
    plugins = sorted({n for n, count in Counter(spec.plugins or []).items() if count > 1})
    if plugins:
        raise _invalid(
            "duplicate_plugins", f"plugins listed twice: {', '.join(plugins)}", plugins=plugins
        )
    listed = {p.name: p.version for p in skills}
    # A preload names a listed skill; a version on it, if any, must be the one `skills` pins.
    extra = [
        str(p) for p in preloads if p.name not in listed or p.version not in (None, listed[p.name])
    ]
    if extra:
        raise _invalid(
            "preload_not_in_skills",
            f"preloadSkills must also be in skills (with the same version, if pinned): "
            f"{', '.join(extra)}",
            skills=extra,
        )


def check_mcp_servers(
    servers: Mapping[str, McpServer], *, trusted: bool
) -> dict[str, McpServerConfig]:
    """Parse with chat_shell's rules (the ones a turn applies); the problems of every server."""
    bad_names = [n[:64] for n in servers if not SERVER_NAME.fullmatch(n)]
    if bad_names:
        raise _invalid(
            "mcp_config_invalid",
            "MCP server names are 1-64 letters, digits, '_', '.' or '-', starting alphanumeric",
            servers=bad_names,
            errors=[{"server": n, "message": "invalid server name"} for n in bad_names],
        )
    configs: dict[str, McpServerConfig] = {}
    errors: list[dict[str, Any]] = []
    for name, server in servers.items():
        try:
            config = parse_mcp_server(
                server.model_dump(mode="json", exclude_none=True), trusted=trusted
            )
        except McpConfigError as exc:
            errors.append({"server": name, "message": exc.message})
            continue
        configs[name] = config
    if errors:
        names = [e["server"] for e in errors]
        raise _invalid(
            "mcp_config_invalid",
            f"invalid MCP server config: {', '.join(names)}",
            servers=names,
            errors=errors,
        )
    _check_stdio(configs)
    _check_placeholders(configs)
    return configs


def _check_egress(
    ghost: Ghost, configs: Mapping[str, McpServerConfig], egress: EgressPolicy
) -> None:
    if ghost.spec.model.base_url is not None:  # used as written: no placeholder is substituted
        if "${{" in ghost.spec.model.base_url:  # it would be requested as the text it is
            raise _invalid(
                "invalid_field",
                "spec.model.baseUrl is used as written: it takes no ${{...}} placeholder",
                field="spec.model.baseUrl",
            )
        model = {"spec.model.baseUrl": ghost.spec.model.base_url}
        check_egress(model, egress, key="field", what="the model endpoint", substituted=False)
    urls = {name: c.url for name, c in configs.items() if c.url is not None}
    check_egress(urls, egress, key="server", what="MCP servers")


def check_stdio_servers(servers: Mapping[str, McpServer], *, trusted: bool) -> None:
    """422 `mcp_stdio_forbidden`, as for a Ghost, when `servers` (a skill's, stored as written)
    hold a stdio server and are not `trusted`. Only the keys that decide the transport are
    read; the rest of a skill's server config stays the turn's to check."""
    configs: dict[str, McpServerConfig] = {}
    for name, server in servers.items():
        raw = server.model_dump(
            mode="json", exclude_none=True, include={"type", "transport", "url", "command"}
        )
        try:
            configs[name] = parse_mcp_server(raw, trusted=trusted)
        except McpConfigError:
            continue  # neither a server to start nor one to reach
    _check_stdio(configs)


def _check_stdio(configs: Mapping[str, McpServerConfig]) -> None:
    forbidden: list[str] = []
    for name, config in configs.items():
        try:
            check_stdio_allowed(name, config)
        except McpStdioForbiddenError:
            forbidden.append(name)
    if forbidden:
        raise _invalid(
            "mcp_stdio_forbidden",
            f"stdio MCP servers are allowed only in server configuration, public skills and "
            f"public Ghosts: {', '.join(forbidden)}",
            servers=forbidden,
        )


def _check_placeholders(configs: Mapping[str, McpServerConfig]) -> None:
    problems: list[dict[str, Any]] = []
    for name, config in configs.items():
        try:
            validate_placeholders(config)
        except McpPlaceholderError as exc:
            problems.append({"server": name, "message": exc.message, **exc.details})
            continue
        for ref in sorted(secret_refs(config)):
            if not SECRET_NAME.fullmatch(ref):
                problems.append(
                    {
                        "server": name,
                        "message": f"${{{{secrets.{ref}}}}} does not name a secret",
                        "placeholder": f"secrets.{ref}",
                    }
                )
    if problems:
        names = sorted({p["server"] for p in problems})
        raise _invalid(
            "mcp_placeholder_invalid",
            f"invalid placeholders in MCP servers: {', '.join(names)}",
            servers=names,
            errors=problems,
        )
