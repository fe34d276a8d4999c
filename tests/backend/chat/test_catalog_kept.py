"""A catalog that fits is kept under its owners' skill generations (`FittingCatalogs`): the next
turn lists it without reading it, and any write to the Ghost's skills is in the turn after it."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import make_setup, send, system_prompt
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.skills import upload


async def test_a_kept_catalog_serves_until_a_skill_changes(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    chat = await make_setup(client, alice, openai_server, skillSelector={})
    kept = app.state.chat.runner.catalogs

    async def turn() -> str:
        openai_server.script(Reply(text="ok"))
        answered = await send(client, chat, await chat.conversation(client), "hello")
        assert answered.status_code == 200, answered.text
        return system_prompt(openai_server.requests[-1])

    first = await turn()
    hits = kept.hits
    assert "pdf-tools" in first and "tide-tables" not in first
    assert await turn() == first and kept.hits == hits + 1  # not read again

    tides = zips.skill("tide-tables", description="Read the tides of a harbour.")
    assert (await upload(client, alice.headers, tides)).status_code == 201
    added = await turn()  # a new generation: read again
    assert "tide-tables" in added and "pdf-tools" in added and kept.hits == hits + 1

    disabled = await client.patch(
        "/api/v1/namespaces/dev/skills/pdf-tools", json={"enabled": False}, headers=alice.headers
    )
    assert disabled.status_code == 200, disabled.text
    without = await turn()
    assert "tide-tables" in without and "pdf-tools" not in without
    assert await turn() == without and kept.hits == hits + 2
