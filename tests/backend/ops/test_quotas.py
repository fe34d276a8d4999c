"""Quotas: 429 naming the limit with Retry-After; shared by gateways through Redis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from fastapi import FastAPI

from backend.app import create_app
from backend.chat.transport import RedisKeys
from backend.config import Settings
from backend.ops import quotas
from backend.ops.quotas import QuotaExceeded
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, ChatSetup, held_turn, make_setup, send
from tests.support.errors import assert_error
from tests.support.ghosts import ghost
from tests.support.lifespan import running
from tests.support.marketplace import marketplace_zip, post_zip
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.skills import upload
from tests.support.sources import SourceServer

CONVERSATIONS = "/api/v1/conversations"
GHOSTS = "/api/v1/namespaces/dev/ghosts"
SKILLS = "/api/v1/namespaces/dev/skills"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW})


def assert_quota(response: httpx.Response, limit: str) -> None:
    assert_error(response, 429, f"quota_{limit}")
    assert 1 <= int(response.headers["retry-after"]) <= 86_400
    assert response.json()["error"]["details"]["limit"] == limit


async def set_quotas(
    client: httpx.AsyncClient, admin: Account, user: Account, **limits: Any
) -> dict[str, Any]:
    response = await client.patch(
        f"/api/v1/users/{user.id}", json={"quotas": limits}, headers=admin.headers
    )
    assert response.status_code == 200, response.text
    quotas: dict[str, Any] = response.json()["quotas"]
    return quotas


async def test_admins_override_a_users_quotas_and_default_restores_the_setting(
    client: httpx.AsyncClient, alice: Account, admin: Account, settings: Settings
) -> None:
    quotas = await set_quotas(client, admin, alice, conversations=1, ghosts=None)
    assert quotas["conversations"] == 1 and quotas["ghosts"] is None
    assert quotas["concurrent_turns"] == settings.max_concurrent_turns_per_user  # not set
    assert (await client.post(GHOSTS, json=ghost("g"), headers=alice.headers)).status_code == 201
    first = await client.post(CONVERSATIONS, json={"ghost": "dev/g"}, headers=alice.headers)
    assert first.status_code == 201
    second = await client.post(CONVERSATIONS, json={"ghost": "dev/g"}, headers=alice.headers)
    assert_quota(second, "conversations")
    quotas = await set_quotas(client, admin, alice, conversations="default", concurrent_turns=2)
    assert quotas["conversations"] is None and quotas["concurrent_turns"] == 2
    again = await client.post(CONVERSATIONS, json={"ghost": "dev/g"}, headers=alice.headers)
    assert again.status_code == 201
    bad = await client.patch(
        f"/api/v1/users/{alice.id}", json={"quotas": {"skills": -1}}, headers=admin.headers
    )
    assert_error(bad, 422, "invalid_request")
    unknown = await client.patch(
        f"/api/v1/users/{alice.id}", json={"quotas": {"wishes": 3}}, headers=admin.headers
    )
    assert_error(unknown, 422, "invalid_request")


async def test_stored_object_quotas_refuse_skills_ghosts_and_bytes_without_writing(
    client: httpx.AsyncClient, alice: Account, bob: Account, admin: Account
) -> None:
    await set_quotas(client, admin, alice, skills=1, ghosts=1)
    h = alice.headers
    assert (await upload(client, h, zips.skill("one"))).status_code == 201
    assert_quota(await upload(client, h, zips.skill("two")), "skills")
    assert (await client.post(GHOSTS, json=ghost("a"), headers=h)).status_code == 201
    assert_quota(await client.post(GHOSTS, json=ghost("b"), headers=h), "ghosts")
    applied = await client.post("/api/v1/apply", json=[ghost("c")], headers=h)
    assert_quota(applied, "ghosts")
    listed = (await client.get(GHOSTS, headers=h)).json()["items"]
    assert [g["metadata"]["name"] for g in listed] == ["a"]  # nothing of the refused written
    # bob has no override: the same requests pass for him
    assert (await upload(client, bob.headers, zips.skill("two"))).status_code == 201
    archive = zips.skill("one", description="A longer description, so more bytes.")
    await set_quotas(client, admin, alice, skill_bytes=len(archive))
    replaced = await client.put(
        "/api/v1/namespaces/dev/skills/one",
        content=archive,
        headers={**h, "Content-Type": "application/zip"},
    )
    assert_quota(replaced, "skill_bytes")


async def test_a_turn_that_crosses_its_token_budget_stops_after_that_call_and_is_stored(
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    chat: ChatSetup = await make_setup(client, alice, openai_server)
    await set_quotas(client, admin, alice, tokens_per_day=100)
    cid = await chat.conversation(client)
    load = Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "pdf-tools"})])
    load.prompt_tokens = 150
    openai_server.script(load, Reply(text="never asked"))
    answer = await client.post(
        f"{CONVERSATIONS}/{cid}/messages", json={"content": "fill it"}, headers=alice.headers
    )
    assert answer.status_code == 200, answer.text
    stored = answer.json()
    assert stored["status"] == "error" and stored["error"]["code"] == "quota_exceeded"
    assert stored["usage"]["prompt_tokens"] == 150  # the call that crossed it is counted
    assert len(openai_server.requests) == 1  # the turn stopped before a second model call
    listed = await client.get(f"{CONVERSATIONS}/{cid}/messages", headers=alice.headers)
    assert listed.json()["items"][-1]["error"]["code"] == "quota_exceeded"
    refused = await client.post(
        f"{CONVERSATIONS}/{cid}/messages", json={"content": "more"}, headers=alice.headers
    )
    assert_quota(refused, "tokens_per_day")


async def test_sends_refused_as_busy_do_not_use_the_turns_per_minute_quota(
    client: httpx.AsyncClient,
    app: FastAPI,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    chat: ChatSetup = await make_setup(client, alice, openai_server)
    await set_quotas(client, admin, alice, turns_per_minute=5)
    cid = await chat.conversation(client)
    counters = app.state.chat.quotas.counters
    for _ in range(2):  # once more if a minute's boundary fell inside the first try
        minute = int(time.time() // 60)
        before = await counters.value(f"{alice.id}:turns", 60)
        async with held_turn(client, chat, openai_server, cid, "held") as sending:
            for _ in range(3):
                assert_error(await send(client, chat, cid, "again"), 409, "turn_in_progress")
            used = await counters.value(f"{alice.id}:turns", 60) - before
        assert (await sending).status_code == 200
        if int(time.time() // 60) == minute:
            break
    assert used == 1  # the turn that ran, not the three refused sends


async def test_an_override_set_between_two_sends_applies_to_the_second(
    client: httpx.AsyncClient, alice: Account, admin: Account, openai_server: FakeOpenAIServer
) -> None:
    # The gateway knows the conversation is alice's (it created it, and her first send ran), so
    # the second send reads nothing before it is admitted: the override comes with her token.
    chat: ChatSetup = await make_setup(client, alice, openai_server)
    cid = await chat.conversation(client)
    openai_server.script(Reply(text="one"))
    assert (await send(client, chat, cid, "first")).status_code == 200
    await set_quotas(client, admin, alice, turns_per_minute=0)
    assert_quota(await send(client, chat, cid, "second"), "turns_per_minute")
    await set_quotas(client, admin, alice, turns_per_minute=None)
    openai_server.script(Reply(text="three"))
    assert (await send(client, chat, cid, "third")).status_code == 200


async def test_a_deleted_conversation_the_gateway_knew_is_a_404_and_stores_nothing(
    client: httpx.AsyncClient, app: FastAPI, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    chat: ChatSetup = await make_setup(client, alice, openai_server)
    cid = await chat.conversation(client)
    gone = await client.delete(f"{CONVERSATIONS}/{cid}", headers=alice.headers)
    assert gone.status_code == 204
    assert_error(await send(client, chat, cid, "hello?"), 404, "conversation_not_found")
    assert not app.state.chat.transport.running(cid)  # its claim went with the refusal


# --- two gateways, one Redis -------------------------------------------------------------------


PREFIX = "quota-test:"  # not the default: the counters must follow SKILLHIVE_REDIS_PREFIX


@pytest.fixture
async def clean_redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    redis = aioredis.Redis.from_url(redis_url)

    async def clean() -> None:
        keys = [k async for k in redis.scan_iter(f"{PREFIX}quota:*")]
        await redis.delete(RedisKeys(PREFIX).stream, *keys)

    await clean()
    try:
        yield redis
    finally:
        await clean()
        await redis.aclose()


@pytest.fixture
async def gateways(
    settings: Settings, redis_url: str, clean_redis: aioredis.Redis
) -> AsyncIterator[tuple[FastAPI, FastAPI]]:
    shared = settings.model_copy(
        update={"redis_url": redis_url, "quota_turns_per_minute": 2, "redis_prefix": PREFIX}
    )
    first, second = create_app(shared), create_app(shared)
    async with running(first), running(second):
        yield first, second


async def _conversation(app: FastAPI, account: Account) -> str:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as c:
        if (await c.get(f"{GHOSTS}/g", headers=account.headers)).status_code == 404:
            await c.post(GHOSTS, json=ghost("g"), headers=account.headers)
        created = await c.post(CONVERSATIONS, json={"ghost": "dev/g"}, headers=account.headers)
        assert created.status_code == 201, created.text
        return str(created.json()["id"])


async def _account(app: FastAPI, name: str) -> Account:
    from backend.auth import service as auth_service

    async with app.state.sessionmaker() as session:
        user = await auth_service.create_user(session, name)
        issued = await auth_service.issue_token(session, user, "t")
        await session.commit()
    return Account(id=user.id, name=name, token=issued.secret)


async def test_two_gateways_share_one_turns_per_minute_quota_and_other_users_go_on(
    gateways: tuple[FastAPI, FastAPI], clean_redis: aioredis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The counters are fixed one-minute windows: the sends must fall in one. The clock of both
    # gateways (one process) stands mid-minute, as a minute's boundary could fall between them.
    frozen = time.time() // 60 * 60 + 30
    monkeypatch.setattr(quotas, "time", SimpleNamespace(time=lambda: frozen))
    first, second = gateways
    alice, bob = await _account(first, "alice"), await _account(first, "bob")
    chats = [await _conversation(first, alice) for _ in range(3)]
    # Turns are queued on the stream (no worker here): admission is all this test is about.
    await first.state.chat.send(alice.id, chats[0], "one")
    await second.state.chat.send(alice.id, chats[1], "two")
    with pytest.raises(QuotaExceeded) as refused:
        await first.state.chat.send(alice.id, chats[2], "three")
    assert refused.value.code == "quota_turns_per_minute"
    transport = httpx.ASGITransport(app=second)
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as c:
        response = await c.post(
            f"{CONVERSATIONS}/{chats[2]}/messages", json={"content": "x"}, headers=alice.headers
        )
    assert_quota(response, "turns_per_minute")
    # bob is not held back by alice's limit, on either gateway
    bobs = [await _conversation(second, bob) for _ in range(2)]
    await first.state.chat.send(bob.id, bobs[0], "hi")
    await second.state.chat.send(bob.id, bobs[1], "hi")
    assert [k async for k in clean_redis.scan_iter(f"{PREFIX}quota:*")]  # shared, under the prefix
    assert not [k async for k in clean_redis.scan_iter("skillhive:quota:*")]


async def test_concurrent_creates_of_one_user_never_store_more_than_the_quota(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    await set_quotas(client, admin, alice, skills=2, ghosts=2, conversations=2)
    h = alice.headers
    uploads = await asyncio.gather(*(upload(client, h, zips.skill(f"s{i}")) for i in range(6)))
    ghosts = await asyncio.gather(
        *(client.post(GHOSTS, json=ghost(f"g{i}"), headers=h) for i in range(6))
    )
    for answers, limit in ((uploads, "skills"), (ghosts, "ghosts")):
        assert sorted(r.status_code for r in answers) == [201] * 2 + [429] * 4, limit
        for refused in (r for r in answers if r.status_code == 429):
            assert_quota(refused, limit)
    made = next(r.json()["metadata"]["name"] for r in ghosts if r.status_code == 201)
    chats = await asyncio.gather(
        *(client.post(CONVERSATIONS, json={"ghost": f"dev/{made}"}, headers=h) for _ in range(6))
    )
    assert sorted(r.status_code for r in chats) == [201] * 2 + [429] * 4
    skills = (await client.get(SKILLS, headers=h)).json()["items"]
    listed = (await client.get(GHOSTS, headers=h)).json()["items"]
    conversations = (await client.get(CONVERSATIONS, headers=h)).json()
    assert (len(skills), len(listed), len(conversations["items"])) == (2, 2, 2)


async def test_imports_plugins_and_rollbacks_count_against_the_skill_quotas(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    h = alice.headers
    await set_quotas(client, admin, alice, skills=2)
    with SourceServer() as server:
        server.files["/repo.zip"] = zips.build(
            {f"repo-main/skills/{n}/SKILL.md": zips.skill_md(n) for n in ("a", "b", "c")}
        )
        imported = await client.post(
            f"{SKILLS}/import", json={"url": server.url("/repo.zip")}, headers=h
        )
    assert imported.status_code == 200, imported.text
    items = {i["path"]: i for i in imported.json()["items"]}
    assert [items[f"skills/{n}"]["result"] for n in "abc"] == ["created", "created", "refused"]
    assert items["skills/c"]["code"] == "quota_skills"
    await set_quotas(client, admin, alice, skills=3)  # one more: the marketplace's sales has 3
    answer = (await post_zip(client, alice, marketplace_zip())).json()
    plugins = {p["name"]: p for p in answer["plugins"]}
    assert plugins["sales"]["status"] == "refused" and plugins["sales"]["code"] == "quota_skills"
    assert plugins["ui-toolkit"]["status"] == "created"  # its one skill fits
    names = sorted(
        s["metadata"]["name"] for s in (await client.get(SKILLS, headers=h)).json()["items"]
    )
    assert names == ["a", "b", "ui-toolkit/web"]  # nothing of the refused plugin was written
    await set_quotas(client, admin, alice, skills="default", skill_bytes=0)
    rolled = await client.post(f"{SKILLS}/a/rollback", json={"version": 1}, headers=h)
    assert_quota(rolled, "skill_bytes")
    history = (await client.get(f"{SKILLS}/a/versions", headers=h)).json()["items"]
    assert len(history) == 1  # the refused rollback made no version
