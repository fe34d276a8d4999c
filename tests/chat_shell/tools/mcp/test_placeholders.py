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
