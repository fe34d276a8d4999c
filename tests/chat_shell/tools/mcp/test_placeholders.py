"""`${{dotted.path}}` placeholders: finding, write-time validation, substitution."""

from __future__ import annotations

from typing import Any

import pytest

from chat_shell.tools.mcp import (
    McpConfigError,
    McpPlaceholderError,
    McpPlaceholderUnresolvedError,
    McpServerConfig,
    find_placeholders,
    parse_mcp_server,
    substitute_placeholders,
    validate_placeholders,
)
from chat_shell.tools.mcp._placeholders import secret_values

CONTEXT: dict[str, Any] = {
    "user": {"id": 42, "name": "ann"},
    "conversation": {"id": "c-1"},
    "secrets": {"TOKEN": "s3cr3t", "EMPTY": ""},
}


def http(**fields: Any) -> McpServerConfig:
    return parse_mcp_server(
        {"type": "http", "url": "https://h.example/mcp", **fields}, trusted=False
    )


def test_substitution_fills_url_headers_args_env_and_command() -> None:
    config = parse_mcp_server(
        {
            "command": "/opt/${{user.name}}/srv",
            "args": ["--conv=${{ conversation.id }}"],
            "env": {"TOKEN": "${{secrets.TOKEN}}"},
        },
        trusted=True,
    )
    done = substitute_placeholders(config, CONTEXT)
    assert (done.command, done.args, done.env) == (
        "/opt/ann/srv",
        ("--conv=c-1",),
        {"TOKEN": "s3cr3t"},
    )

    remote = http(
        url="https://h.example/u/${{user.id}}/mcp",
        headers={"Authorization": "Bearer ${{secrets.TOKEN}}", "X-Plain": "as is"},
    )
    done = substitute_placeholders(remote, CONTEXT)
    assert done.url == "https://h.example/u/42/mcp"
    assert done.headers == {"Authorization": "Bearer s3cr3t", "X-Plain": "as is"}
    assert remote.headers["Authorization"] == "Bearer ${{secrets.TOKEN}}"  # the input is untouched


def test_an_empty_secret_is_a_value() -> None:
    done = substitute_placeholders(http(headers={"X": "<${{secrets.EMPTY}}>"}), CONTEXT)
    assert done.headers == {"X": "<>"}


@pytest.mark.parametrize(
    "placeholder", ["secrets.MISSING", "user.email", "conversation", "tenant.id", "user.id.more"]
)
def test_an_unresolved_placeholder_is_an_error_naming_it(placeholder: str) -> None:
    config = http(headers={"X": "${{" + placeholder + "}}"})
    with pytest.raises(McpPlaceholderUnresolvedError) as info:
        substitute_placeholders(config, CONTEXT)
    assert info.value.code == "mcp_placeholder_unresolved"
    assert info.value.details == {"placeholder": placeholder}
    assert placeholder in info.value.message


@pytest.mark.parametrize("text", ["${{user.}}", "${{ }}", "${{user.id}", "x${{a b}}"])
def test_malformed_placeholders_are_never_passed_through(text: str) -> None:
    config = http(args=[text])
    with pytest.raises(McpPlaceholderError) as info:
        substitute_placeholders(config, CONTEXT)
    assert info.value.code == "mcp_placeholder_invalid"
    with pytest.raises(McpPlaceholderError):
        validate_placeholders(config)


def test_substituted_values_are_not_substituted_again() -> None:
    context = {**CONTEXT, "user": {"id": "${{secrets.TOKEN}}"}}
    done = substitute_placeholders(http(headers={"X": "${{user.id}}"}), context)
    assert done.headers == {"X": "${{secrets.TOKEN}}"}


def test_a_user_value_cannot_smuggle_an_env_reference_into_a_stdio_env() -> None:
    # The adapters expand ${VAR} in stdio env values from the worker's own environment.
    config = parse_mcp_server({"command": "srv", "env": {"N": "${{user.name}}"}}, trusted=True)
    with pytest.raises(McpPlaceholderError) as info:
        substitute_placeholders(config, {"user": {"name": "${OPENAI_API_KEY}"}})
    assert info.value.details == {"placeholder": "user.name", "field": "env.N"}


def test_a_substituted_url_is_validated_again() -> None:
    config = http(url="${{user.name}}")
    with pytest.raises(McpConfigError):
        substitute_placeholders(config, {"user": {"name": "file:///etc/passwd"}})


def test_find_placeholders_lists_every_dotted_path() -> None:
    config = parse_mcp_server(
        {
            "command": "${{user.name}}",
            "args": ["${{conversation.id}}-${{user.id}}"],
            "env": {"A": "${{secrets.A}}"},
        },
        trusted=True,
    )
    assert find_placeholders(config) == {"user.name", "conversation.id", "user.id", "secrets.A"}
    assert find_placeholders(http(headers={"X": "${{secrets.B}}"})) == {"secrets.B"}


def test_write_time_validation_accepts_known_forms_only() -> None:
    validate_placeholders(
        http(
            url="https://h.example/${{user.id}}/${{conversation.id}}",
            headers={"A": "${{secrets.TOKEN}}", "B": "${{user.name}}"},
        )
    )
    for unknown in ("env.HOME", "secrets", "tenant.name"):
        with pytest.raises(McpPlaceholderError) as info:
            validate_placeholders(http(headers={"X": "${{" + unknown + "}}"}))
        assert info.value.details == {"placeholder": unknown}


@pytest.mark.parametrize(
    ("template", "value", "url"),
    [
        # A value in the userinfo or the path cannot move the URL to another host...
        (
            "https://${{secrets.T}}@api.vendor.example/",
            "a@evil.example/x",
            "https://a%40evil.example%2Fx@api.vendor.example/",
        ),
        (
            "https://api.vendor.example/${{secrets.T}}",
            "../../admin?x=1#",
            "https://api.vendor.example/..%2F..%2Fadmin%3Fx%3D1%23",
        ),
        # ...one in the host stays a host (or no valid URL at all), and `host:port` still works
        ("https://${{secrets.T}}.vendor.example/", "eu", "https://eu.vendor.example/"),
        ("http://${{secrets.T}}/mcp", "127.0.0.1:8080", "http://127.0.0.1:8080/mcp"),
        # the whole URL is the tenant's: as given (the egress policy judges it)
        ("${{secrets.T}}", "https://x.example/a?b=c", "https://x.example/a?b=c"),
    ],
)
def test_a_value_in_a_url_is_data_not_syntax(template: str, value: str, url: str) -> None:
    config = parse_mcp_server({"type": "http", "url": template}, trusted=True)
    assert substitute_placeholders(config, {"secrets": {"T": value}}).url == url


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\x00b", "a\x7f"])
def test_a_header_value_may_not_hold_control_characters(value: str) -> None:
    config = http(headers={"Authorization": "Bearer ${{secrets.T}}"})
    with pytest.raises(McpPlaceholderError) as info:
        substitute_placeholders(config, {"secrets": {"T": value}})
    assert info.value.details == {"placeholder": "secrets.T", "field": "headers.Authorization"}
    assert value not in info.value.message


def test_a_header_value_may_hold_a_tab() -> None:
    done = substitute_placeholders(
        http(headers={"X": "${{secrets.T}}"}), {"secrets": {"T": "a\tb"}}
    )
    assert done.headers == {"X": "a\tb"}


def test_no_value_holds_a_nul_byte() -> None:
    config = parse_mcp_server({"command": "srv", "args": ["${{secrets.T}}"]}, trusted=True)
    with pytest.raises(McpPlaceholderError) as info:
        substitute_placeholders(config, {"secrets": {"T": "a\x00b"}})
    assert info.value.details == {"placeholder": "secrets.T", "field": "args[0]"}


@pytest.mark.parametrize(
    ("template", "values"),
    [
        ("${{secrets.A}}${{secrets.B}}", {"A": "$", "B": "{SKILLHIVE_SECRETS_KEY}"}),
        ("$${{secrets.B}}", {"B": "{SKILLHIVE_SECRETS_KEY}"}),
        ("${{secrets.A}}{HOME}", {"A": "$"}),
    ],
)
def test_values_may_not_join_into_an_env_reference(template: str, values: dict[str, str]) -> None:
    config = parse_mcp_server({"command": "srv", "env": {"N": template}}, trusted=True)
    with pytest.raises(McpPlaceholderError) as info:
        substitute_placeholders(config, {"secrets": values})
    assert info.value.details == {"field": "env.N"}


def test_an_env_reference_written_in_the_template_stays() -> None:
    config = parse_mcp_server(
        {"command": "srv", "env": {"P": "${HOME}/${{user.name}}"}}, trusted=True
    )
    assert substitute_placeholders(config, CONTEXT).env == {"P": "${HOME}/ann"}


def test_secrets_are_masked_as_messages_may_show_them() -> None:
    """A library's repr escapes a value, a URL percent-encodes it: both forms are masked too."""
    config = http(url="https://h.example/${{secrets.A}}", headers={"X": "${{secrets.B}}"})
    secrets = {"A": "p@ss/word", "B": "tab\there"}
    assert secret_values(config, {"secrets": secrets}) == {
        "p@ss/word",
        "p%40ss%2Fword",
        "tab\there",
        "tab\\there",
        "tab%09here",
    }
