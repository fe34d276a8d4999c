"""Server configs: parsing, validation errors with stable codes, trust, merge precedence."""

from __future__ import annotations

from typing import Any

import pytest

from chat_shell.errors import ChatShellError
from chat_shell.tools.mcp import (
    McpConfigError,
    McpServerConfig,
    McpStdioForbiddenError,
    check_stdio_allowed,
    merge_mcp_servers,
    parse_mcp_server,
    parse_mcp_servers,
)

URL = "https://mcp.example.com/mcp"


@pytest.mark.parametrize(
    ("raw", "transport"),
    [
        ({"type": "streamable-http", "url": URL}, "streamable_http"),
        ({"transport": "streamableHttp", "url": URL}, "streamable_http"),
        ({"type": "http", "url": URL}, "streamable_http"),
        ({"type": "streamable_http", "url": URL}, "streamable_http"),
        ({"type": "SSE", "url": URL}, "sse"),
        ({"transport": "stdio", "command": "srv"}, "stdio"),
        ({"command": "srv", "args": ["-v"]}, "stdio"),
        ({"url": URL}, "streamable_http"),
    ],
)
def test_transport_spellings_and_keys_are_normalized(raw: dict[str, Any], transport: str) -> None:
    assert parse_mcp_server(raw, trusted=False).transport == transport


def test_a_full_config_keeps_every_field() -> None:
    config = parse_mcp_server(
        {"type": "sse", "url": URL, "headers": {"X-A": "1"}, "timeout": 2.5}, trusted=True
    )
    assert (config.url, config.headers, config.timeout, config.trusted) == (
        URL,
        {"X-A": "1"},
        2.5,
        True,
    )


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"type": "sse"}, "url"),
        ({"type": "http", "headers": {"a": "b"}}, "url"),
        ({"type": "stdio", "args": ["x"]}, "command"),
        ({"type": "http", "url": "file:///etc/passwd"}, "url"),
    ],
)
def test_missing_or_bad_endpoint_is_a_config_error_naming_the_field(
    raw: dict[str, Any], field: str
) -> None:
    with pytest.raises(McpConfigError) as info:
        parse_mcp_server(raw, trusted=True)
    assert info.value.code == "mcp_config_invalid"
    assert info.value.details["field"] == field
    assert isinstance(info.value, ChatShellError)


def test_the_scheme_of_a_url_is_read_in_any_case_as_the_egress_policy_reads_it() -> None:
    config = parse_mcp_server({"type": "http", "url": "HTTPS://mcp.example.com/mcp"}, trusted=False)
    assert config.url == "HTTPS://mcp.example.com/mcp"


def test_the_model_itself_raises_the_coded_error_not_a_validation_error() -> None:
    with pytest.raises(McpConfigError):
        McpServerConfig(transport="sse")


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "websocket", "url": URL},
        {"type": "http", "url": URL, "headers": "Authorization: x"},
        {"type": "http", "url": URL, "timeout": 0},
        {"type": "http", "url": URL, "heders": {}},
        {"args": ["x"]},
    ],
)
def test_malformed_configs_become_config_errors(raw: dict[str, Any]) -> None:
    with pytest.raises(McpConfigError) as info:
        parse_mcp_server(raw, trusted=False)
    assert info.value.code == "mcp_config_invalid"
    assert info.value.details["errors"]


def test_parse_servers_names_the_bad_server() -> None:
    with pytest.raises(McpConfigError) as info:
        parse_mcp_servers({"ok": {"url": URL}, "broken": {"type": "sse"}}, trusted=False)
    assert info.value.details["server"] == "broken"
    assert "broken" in info.value.message


def test_trust_comes_from_the_caller_never_from_the_input() -> None:
    config = parse_mcp_server({"command": "srv", "trusted": True}, trusted=False)
    assert config.trusted is False


def test_untrusted_stdio_is_forbidden_and_trusted_stdio_or_remote_is_allowed() -> None:
    stdio = {"command": "srv"}
    with pytest.raises(McpStdioForbiddenError) as info:
        check_stdio_allowed("local", parse_mcp_server(stdio, trusted=False))
    assert info.value.code == "mcp_stdio_forbidden"
    assert info.value.details == {"server": "local"}
    check_stdio_allowed("local", parse_mcp_server(stdio, trusted=True))
    check_stdio_allowed("remote", parse_mcp_server({"url": URL}, trusted=False))


def test_merge_precedence_is_skill_over_ghost_over_global_by_name() -> None:
    def server(name: str) -> McpServerConfig:
        return parse_mcp_server({"url": f"https://{name}.example.com/mcp"}, trusted=False)

    merged = merge_mcp_servers(
        {"a": server("global-a"), "b": server("global-b"), "c": server("global-c")},
        {"b": server("ghost-b"), "c": server("ghost-c")},
        {"c": server("skill-c"), "d": server("skill-d")},
    )
    assert {name: c.url for name, c in merged.items()} == {
        "a": "https://global-a.example.com/mcp",
        "b": "https://ghost-b.example.com/mcp",
        "c": "https://skill-c.example.com/mcp",
        "d": "https://skill-d.example.com/mcp",
    }


def test_merge_replaces_whole_entries_so_nothing_leaks_from_the_loser() -> None:
    trusted_global = parse_mcp_server(
        {"url": URL, "headers": {"Authorization": "Bearer admin"}}, trusted=True
    )
    ghost = parse_mcp_server({"url": "https://other.example.com/mcp"}, trusted=False)
    merged = merge_mcp_servers({"s": trusted_global}, {"s": ghost}, None)
    assert merged["s"] == ghost
    assert merged["s"].headers == {}
    assert merged["s"].trusted is False
    assert merge_mcp_servers(None, None, None) == {}
