"""Imports hold memory, so a process runs a bounded number at once and one per user."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI

from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.errors import assert_error
from tests.support.marketplace import TOOLKIT_FILES, plugin_zip
from tests.support.sources import SourceServer

SKILLS = "/api/v1/namespaces/dev/skills"
PLUGINS = "/api/v1/namespaces/dev/plugins"
ZIP = {"Content-Type": "application/zip"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW, "import_concurrency": 1})


@pytest.fixture
def server() -> Iterator[SourceServer]:
    with SourceServer() as source:
        source.files["/s.zip"] = zips.skill("alpha")
        yield source


async def test_a_users_second_import_is_refused_while_the_first_runs_and_passes_after(
    client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    h = alice.headers
    held = asyncio.create_task(
        client.post(f"{SKILLS}/import", json={"url": server.url("/held")}, headers=h)
    )
    await server.reached("/held")
    second = await client.post(f"{SKILLS}/import", json={"url": server.url("/s.zip")}, headers=h)
    assert_error(second, 429, "import_in_progress")
    assert int(second.headers["retry-after"]) >= 1
    plugin = plugin_zip(TOOLKIT_FILES, "partner/ui-toolkit/")
    upload = await client.post(PLUGINS, content=plugin, headers={**h, **ZIP})
    assert_error(upload, 429, "import_in_progress")  # a plugin archive is an import too
    server.held.set()
    assert (await held).status_code == 422  # the held answer was empty: not an archive
    again = await client.post(f"{SKILLS}/import", json={"url": server.url("/s.zip")}, headers=h)
    assert again.status_code == 200, again.text  # the slot and the user's turn are back
    assert [i["result"] for i in again.json()["items"]] == ["created"]
    skills = (await client.get(SKILLS, headers=h)).json()["items"]
    assert [s["metadata"]["name"] for s in skills] == ["alpha"]


async def test_with_every_slot_busy_another_users_import_waits_then_is_answered_busy(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, bob: Account, server: SourceServer
) -> None:
    held = asyncio.create_task(
        client.post(f"{SKILLS}/import", json={"url": server.url("/held")}, headers=alice.headers)
    )
    await server.reached("/held")
    saved = app.state.settings
    app.state.settings = saved.model_copy(update={"import_timeout_seconds": 0.3})
    try:
        busy = await client.post(
            f"{SKILLS}/import", json={"url": server.url("/s.zip")}, headers=bob.headers
        )
    finally:
        app.state.settings = saved
    assert_error(busy, 503, "import_busy")
    assert int(busy.headers["retry-after"]) >= 1
    waiting = asyncio.create_task(
        client.post(f"{SKILLS}/import", json={"url": server.url("/s.zip")}, headers=bob.headers)
    )
    await asyncio.sleep(0.2)
    assert not waiting.done()  # queued for the one slot, not refused
    server.held.set()
    await held
    done = await waiting
    assert done.status_code == 200, done.text
    assert [i["result"] for i in done.json()["items"]] == ["created"]
