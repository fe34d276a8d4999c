"""A turn reads its Ghost and skills as validated CRDs: a secret in a stored MCP header reaches
the engine as a placeholder the one parser resolves, and a stored row that no longer validates
is a stable `stored_crd_invalid`, never a 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from backend.chat import conversations
from backend.chat.catalog import SkillSpecCache
from backend.chat.turns import PreparedTurn
from backend.crd.stored import StoredCrdInvalid
from backend.db.models import Kind
from backend.ghosts.resolve import resolve_ghost
from chat_shell.tools.mcp import substitute_placeholders
from tests.support.accounts import Account
from tests.support.chat import ChatSetup, ghost_crd

TOKEN = "tok-0123456789-secret"
MCP = {"api": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "Bearer ${{secrets.TOKEN}}"}}}


async def _ghost_with_mcp(client: httpx.AsyncClient, account: Account) -> str:
    put = await client.put("/api/v1/secrets/TOKEN", json={"value": TOKEN}, headers=account.headers)
    assert put.status_code in (201, 204), put.text
    body = ghost_crd("tooled", model={"name": "offline"}, mcpServers=MCP)
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
    assert created.status_code == 201, created.text
    conversation = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/tooled"}, headers=account.headers
    )
    assert conversation.status_code == 201, conversation.text
    return str(conversation.json()["id"])


async def _user_message(app: FastAPI, account: Account, cid: str) -> int:
    async with app.state.sessionmaker() as session:
        message_id = await conversations.add_user_message(session, account.id, cid, "hello")
        await session.commit()
        return message_id


async def _corrupt(app: FastAPI, kind: str, name: str, **spec: Any) -> None:
    """What an older version with looser rules might have stored."""
    async with app.state.sessionmaker() as session:
        row = await session.scalar(select(Kind).where(Kind.kind == kind, Kind.name == name))
        assert row is not None
        crd = {**row.json, "spec": {**row.json["spec"], **spec}}
        await session.execute(update(Kind).where(Kind.id == row.id).values(json=crd))
        await session.commit()


async def test_a_secret_in_a_stored_mcp_header_is_resolved_by_the_placeholder_parser(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    cid = await _ghost_with_mcp(client, alice)
    prepared = await app.state.chat.runner.prepare(cid, await _user_message(app, alice, cid))
    assert isinstance(prepared, PreparedTurn)
    request = prepared.request
    config = request.mcp_servers["api"]
    assert config.headers == {"X-Key": "Bearer ${{secrets.TOKEN}}"} and not config.trusted
    secrets = {k: v.get_secret_value() for k, v in request.context.secrets.items()}
    assert secrets == {"TOKEN": TOKEN}  # loaded because the parser found the reference
    resolved = substitute_placeholders(config, {"secrets": secrets})
    assert resolved.headers == {"X-Key": f"Bearer {TOKEN}"}


async def test_a_stored_ghost_that_no_longer_validates_is_a_clear_error(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    cid = await _ghost_with_mcp(client, alice)
    await _corrupt(app, "Ghost", "tooled", retentionTurns="many", legacyKnob=True)

    async with app.state.sessionmaker() as session:
        with pytest.raises(StoredCrdInvalid) as refused:
            await resolve_ghost(session, alice.id, "dev/tooled")
    error = refused.value
    assert (error.status_code, error.code) == (409, "stored_crd_invalid")
    assert error.details["kind"] == "Ghost" and error.details["name"] == "tooled"
    failing = sorted(".".join(e["loc"]) for e in error.details["errors"])
    assert failing == ["spec.legacyKnob", "spec.retentionTurns"]
    assert TOKEN not in str(error.to_dict())

    # The turn ends with that code, stored; the API answers 409, not 500.
    url = f"/api/v1/conversations/{cid}/messages"
    reply = await client.post(url, json={"content": "hello"}, headers=alice.headers)
    assert reply.status_code == 200, reply.text
    assert reply.json()["status"] == "error"
    assert reply.json()["error"]["code"] == "stored_crd_invalid"
    commands = await client.get(
        "/api/v1/namespaces/dev/ghosts/tooled/commands", headers=alice.headers
    )
    assert commands.status_code == 409
    assert commands.json()["error"]["code"] == "stored_crd_invalid"


async def test_a_stored_skill_that_no_longer_validates_is_a_clear_error(
    app: FastAPI, client: httpx.AsyncClient, chat: ChatSetup
) -> None:
    await _corrupt(app, "Skill", "pdf-tools", description="")  # a description is required
    async with app.state.sessionmaker() as session:
        row = await session.scalar(select(Kind).where(Kind.name == "pdf-tools"))
        assert row is not None
        with pytest.raises(StoredCrdInvalid) as refused:
            await SkillSpecCache().get(session, row.id, row.json["status"]["sha256"], False)
    assert refused.value.code == "stored_crd_invalid"
    assert refused.value.details["kind"] == "Skill"
    assert refused.value.details["name"] == "pdf-tools"
