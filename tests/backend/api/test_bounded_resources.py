"""No database connection stays checked out while a turn runs, a body streams or an SSE stream is
open; a pool with no connection free answers 503 with Retry-After; big YAML parses off the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backend.api.routes import apply as apply_route
from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, make_setup
from tests.support.errors import assert_error
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.wait import eventually


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    # A pool of 2 connections that gives up soon: anything holding one through a turn (held
    # until the test opens the model's gate) shows. 2 s, not less: a suite's parallel workers
    # on two cores can keep a send from its connection for half a second.
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        egress_allow=LOOPBACK_ALLOW,
        database_pool_size=1,
        database_auth_pool_size=1,
        database_pool_timeout=2.0,
    )


def checked_out(app: FastAPI) -> int:
    return int(app.state.engine.pool.checkedout())


async def none_stays_checked_out(app: FastAPI) -> None:
    """Every connection comes back (soon: the token's `last_used_at` is written in the
    background, briefly) while the turns, streams and bodies go on."""

    async def none() -> bool:
        return checked_out(app) == 0

    await eventually(none)


async def test_no_connection_is_held_while_json_and_sse_turns_run(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    setup = await make_setup(client, alice, openai_server)
    gate = threading.Event()
    openai_server.script(*[Reply(text=f"answer {i}", gate=gate) for i in range(3)])
    sse = {**alice.headers, "Accept": "text/event-stream"}
    sends = []
    for headers in (alice.headers, sse, sse):
        cid = await setup.conversation(client)
        url = f"/api/v1/conversations/{cid}/messages"
        sends.append(asyncio.create_task(client.post(url, json={"content": "hi"}, headers=headers)))
    try:

        async def all_waiting_on_the_model() -> bool:
            return len(openai_server.requests) == 3

        await eventually(all_waiting_on_the_model)
        await none_stays_checked_out(app)
        me = await client.get("/api/v1/me", headers=alice.headers)
        assert me.status_code == 200, me.text  # more turns than connections, and /me still works
    finally:
        gate.set()
    answers = await asyncio.gather(*sends)
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert all("event: done" in a.text for a in answers[1:])
    # The model answers in the order its requests arrive, which the three sends do not fix.
    json_answer = answers[0].json()["content"]
    streamed = [
        next(f"answer {i}" for i in range(3) if f"answer {i}" in a.text) for a in answers[1:]
    ]
    assert sorted([json_answer, *streamed]) == ["answer 0", "answer 1", "answer 2"]


async def test_no_connection_is_held_while_an_upload_body_streams(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    archive = zips.build(
        {"SKILL.md": "---\nname: slow-one\ndescription: Arrives slowly.\n---\nBody.\n"},
        folder="slow-one",
    )
    first_sent = asyncio.Event()
    go_on = asyncio.Event()

    async def trickle() -> AsyncIterator[bytes]:
        yield archive[:10]
        first_sent.set()
        await go_on.wait()
        yield archive[10:]

    headers = {**alice.headers, "Content-Type": "application/zip"}
    upload = asyncio.create_task(
        client.post("/api/v1/namespaces/dev/skills", content=trickle(), headers=headers)
    )
    await asyncio.wait_for(first_sent.wait(), 10)
    try:
        await none_stays_checked_out(app)
    finally:
        go_on.set()
    assert (await upload).status_code == 201


async def test_no_free_connection_is_a_503_with_retry_after_not_a_500(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    engine = app.state.engine
    async with engine.connect() as one, engine.connect() as two:  # the whole main pool
        await one.exec_driver_sql("SELECT 1")
        await two.exec_driver_sql("SELECT 1")
        # Authentication has a pool of its own: who calls is known, the route's work waits.
        me = await client.get("/api/v1/me", headers=alice.headers)
        assert me.status_code == 200, me.text
        with_body = await client.post(
            "/api/v1/conversations", json={"ghost": "dev/x"}, headers=alice.headers
        )
        auth_engine = app.state.auth.reads.kw["bind"]
        async with auth_engine.connect() as auth:  # and the whole auth pool
            await auth.exec_driver_sql("SELECT 1")
            busy = await client.get("/api/v1/me", headers=alice.headers)
    for response in (busy, with_body):
        assert_error(response, 503, "dependency_unavailable")
        assert response.json()["error"]["details"]["error"] == "TimeoutError"
        assert response.headers["retry-after"] == "2"
    assert (await client.get("/api/v1/me", headers=alice.headers)).status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)
async def test_healthz_answers_while_a_4_mib_apply_body_is_parsed(
    client: httpx.AsyncClient, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, finished = threading.Event(), threading.Event()
    parse = apply_route.parse_documents

    def watched(data: bytes, media: str) -> list[Any]:
        started.set()
        try:
            return parse(data, media)
        finally:
            finished.set()

    monkeypatch.setattr(apply_route, "parse_documents", watched)
    line = "- " + "x" * 60 + "\n"
    body = line * ((apply_route.MAX_APPLY_BYTES - 64) // len(line))  # one list: not a Ghost
    headers = {**alice.headers, "Content-Type": "application/yaml"}
    applying = asyncio.create_task(client.post("/api/v1/apply", content=body, headers=headers))

    async def parsing() -> bool:
        return started.is_set()

    await eventually(parsing)
    health = await client.get("/healthz")
    assert health.status_code == 200
    assert not finished.is_set()  # answered while the parse still ran
    assert (await applying).status_code == 422


@pytest.mark.parametrize("db_backend", ["postgresql"], indirect=True)
async def test_auth_reads_on_connections_the_server_closed_go_again_on_new_ones(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    """The auth pool skips the pre-ping round trip: a read on a connection the server closed
    fails, and is retried once on a new connection, so the request never sees it."""
    assert (await client.get("/api/v1/me", headers=alice.headers)).status_code == 200
    async with app.state.engine.connect() as admin:  # every other session of this database
        await admin.exec_driver_sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    answers = [await client.get("/api/v1/me", headers=alice.headers) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 200]
