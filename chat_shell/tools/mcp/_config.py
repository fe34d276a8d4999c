"""MCP server configuration: the model, its validation, trust and merging."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from chat_shell.tools.mcp._errors import McpConfigError, McpStdioForbiddenError

Transport = Literal["stdio", "sse", "streamable_http"]

# Spellings seen in the wild (Claude/Cursor configs, the adapters, the TS SDK) -> our name.
_TRANSPORT_ALIASES: dict[str, Transport] = {
    "stdio": "stdio",
    "sse": "sse",
    "streamable_http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamablehttp": "streamable_http",
    "http": "streamable_http",
}


class McpServerConfig(BaseModel):
    """One MCP server as configured (globally, on a Ghost or in a skill).

    `transport` may be given as `transport` or `type`; when absent it is inferred (`command` ->
    stdio, `url` -> streamable_http), as common MCP client configs do. `timeout` is the connect
    timeout in seconds (None: the pool's default). `trusted` is set by the caller, never taken
    from user input: parse untrusted data with `parse_mcp_servers(..., trusted=False)`.
    The host keeps its own stored form (backend's CRD `McpServer`, placeholders verbatim) and
    parses it into this one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    transport: Transport = Field(validation_alias=AliasChoices("transport", "type"))
    url: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float | None = Field(default=None, gt=0)
    trusted: bool = False

    @model_validator(mode="before")
    @classmethod
    def _infer_transport(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "transport" not in data and "type" not in data:
            if data.get("command"):
                return {**data, "transport": "stdio"}
            if data.get("url"):
                return {**data, "transport": "streamable_http"}
        return data

    @field_validator("transport", mode="before")
    @classmethod
    def _normalize_transport(cls, value: Any) -> Any:
        if isinstance(value, str):
            return _TRANSPORT_ALIASES.get(value.strip().lower(), value)
        return value

    @model_validator(mode="after")
    def _check_required(self) -> McpServerConfig:
        # Raised as-is (not a ValueError), so it escapes pydantic with its stable code.
        if self.transport == "stdio":
            if not self.command:
                raise McpConfigError(
                    "an MCP stdio server needs a 'command'", details={"field": "command"}
                )
        elif not self.url:
            raise McpConfigError(
                f"an MCP {self.transport} server needs a 'url'", details={"field": "url"}
            )
        elif not self.url.lower().startswith(("http://", "https://", "${{")):  # as egress reads it
            raise McpConfigError("an MCP server url must be http(s)", details={"field": "url"})
        return self


def parse_mcp_server(data: Mapping[str, Any], *, trusted: bool) -> McpServerConfig:
    """Validate raw config data; any problem becomes `McpConfigError`. `trusted` overrides input."""
    try:
        config = McpServerConfig.model_validate({**data, "trusted": trusted})
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(p) for p in err["loc"]), "message": err["msg"]}
            for err in exc.errors(include_url=False, include_input=False)
        ]
        raise McpConfigError(
            f"invalid MCP server config: {errors[0]['field']}: {errors[0]['message']}",
            details={"errors": errors},
        ) from None
    return config


def parse_mcp_servers(
    data: Mapping[str, Mapping[str, Any]], *, trusted: bool
) -> dict[str, McpServerConfig]:
    """Validate a `{name: config}` mapping; errors name the server in `details['server']`."""
    servers: dict[str, McpServerConfig] = {}
    for name, raw in data.items():
        try:
            servers[name] = parse_mcp_server(raw, trusted=trusted)
        except McpConfigError as exc:
            exc.details["server"] = name
            raise McpConfigError(
                f"MCP server {name!r}: {exc.message}", details=exc.details
            ) from None
    return servers


def check_stdio_allowed(name: str, config: McpServerConfig) -> None:
    """Raise `McpStdioForbiddenError` for an untrusted stdio server (usable on write)."""
    if config.transport == "stdio" and not config.trusted:
        raise McpStdioForbiddenError(
            f"MCP server {name!r}: stdio servers are allowed only in server configuration and "
            "public skills",
            details={"server": name},
        )


def merge_mcp_servers(
    global_servers: Mapping[str, McpServerConfig] | None,
    ghost_servers: Mapping[str, McpServerConfig] | None,
    skill_servers: Mapping[str, McpServerConfig] | None,
) -> dict[str, McpServerConfig]:
    """Merge by server name with precedence skill > Ghost > global.

    A winning entry replaces the loser whole (no field-level merge): a user's Ghost overriding a
    global server must not inherit its headers (credentials) or its `trusted` flag.
    """
    merged: dict[str, McpServerConfig] = {}
    for layer in (global_servers, ghost_servers, skill_servers):
        merged.update(layer or {})
    return merged
