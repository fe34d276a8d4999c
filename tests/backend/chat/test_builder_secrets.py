"""Secret references are found by the placeholder parser, not by searching JSON text."""

from __future__ import annotations

from backend.chat.builder import mcp_uses_secrets, needs_secrets, stored_mcp_uses_secrets
from chat_shell import parse_mcp_servers

NAMED = {"api": {"url": "https://mcp.example/x", "headers": {"X-Key": "${{ secrets.API_KEY }}"}}}
MENTIONED = {
    "docs": {"url": "https://mcp.example/secrets.json", "headers": {"X-User": "${{user.id}}"}}
}


def ghost(**spec: object) -> dict[str, object]:
    return {"spec": spec}


def test_a_secrets_placeholder_is_a_reference_and_a_mention_in_text_is_not() -> None:
    assert mcp_uses_secrets(parse_mcp_servers(NAMED, trusted=False))
    assert not mcp_uses_secrets(parse_mcp_servers(MENTIONED, trusted=False))
    assert stored_mcp_uses_secrets(NAMED) and not stored_mcp_uses_secrets(MENTIONED)
    assert not stored_mcp_uses_secrets(None)


def test_a_turn_needs_secrets_only_when_something_it_may_use_names_one() -> None:
    server = parse_mcp_servers(NAMED, trusted=True)
    assert not needs_secrets(ghost(mcpServers=MENTIONED), {}, skills_use_secrets=False)
    assert needs_secrets(ghost(mcpServers=NAMED), {}, skills_use_secrets=False)
    assert needs_secrets(ghost(), server, skills_use_secrets=False)  # the server's own config
    assert needs_secrets(ghost(model={"apiKeySecret": "K"}), {}, skills_use_secrets=False)
    assert needs_secrets(ghost(), {}, skills_use_secrets=True)
