"""Secret references are found by the placeholder parser over typed MCP configs, not by
searching JSON text; a Ghost's servers are parsed once, when it is resolved."""

from __future__ import annotations

from typing import Any

from backend.chat.builder import needs_secrets
from backend.chat.mcp import engine_servers, secret_names
from backend.crd.ghost import Ghost
from backend.crd.skill import McpServer
from backend.ghosts import PUBLIC_GHOSTS
from backend.ghosts.resolve import ResolvedGhost
from backend.kinds.store import Scope
from backend.skills.search.index import uses_secrets

NAMED = {"api": {"url": "https://mcp.example/x", "headers": {"X-Key": "${{ secrets.API_KEY }}"}}}
MENTIONED = {
    "docs": {"url": "https://mcp.example/secrets.json", "headers": {"X-User": "${{user.id}}"}}
}


def servers(raw: dict[str, Any]) -> dict[str, Any]:
    typed = {name: McpServer.model_validate(server) for name, server in raw.items()}
    return engine_servers(typed, trusted=False)


ALICE = Scope(1, "dev")


def resolved(owner: Scope = ALICE, **spec: Any) -> ResolvedGhost:
    return ResolvedGhost.of(Ghost.model_validate({"metadata": {"name": "g"}, "spec": spec}), owner)


def test_a_secrets_placeholder_is_a_reference_and_a_mention_in_text_is_not() -> None:
    assert secret_names(servers(NAMED)) == {"API_KEY"}
    assert secret_names(servers(MENTIONED)) == frozenset()
    assert uses_secrets(NAMED) and not uses_secrets(MENTIONED) and not uses_secrets({})


def test_a_resolved_ghost_carries_its_parsed_servers_and_the_secrets_they_name() -> None:
    ghost = resolved(mcpServers={**NAMED, **MENTIONED}, model={"apiKeySecret": "K"})
    assert ghost.secrets == {"API_KEY", "K"}
    assert ghost.mcp_servers["api"].headers == {"X-Key": "${{ secrets.API_KEY }}"}
    assert not any(c.trusted for c in ghost.mcp_servers.values())
    public = resolved(PUBLIC_GHOSTS, mcpServers=NAMED)
    assert public.public and public.mcp_servers["api"].trusted
    # One turn's preloads change the spec it sees, not the servers parsed once.
    widened = ghost.with_preloads(["pdf"])
    assert widened.spec.preload_skills == ["pdf"] and ghost.spec.preload_skills == []
    assert widened.mcp_servers is ghost.mcp_servers


def test_a_turn_needs_secrets_only_when_something_it_may_use_names_one() -> None:
    server = servers(NAMED)
    assert not needs_secrets(resolved(mcpServers=MENTIONED), {}, skills_use_secrets=False)
    assert needs_secrets(resolved(mcpServers=NAMED), {}, skills_use_secrets=False)
    assert needs_secrets(resolved(), server, skills_use_secrets=False)  # the server's own config
    assert needs_secrets(resolved(model={"apiKeySecret": "K"}), {}, skills_use_secrets=False)
    assert needs_secrets(resolved(), {}, skills_use_secrets=True)
