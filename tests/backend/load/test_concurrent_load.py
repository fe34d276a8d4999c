"""Load, together on one live gateway with the default pool: 64 concurrent JSON chats, 200
concurrent SSE chats, 16 uploads trickling their last bytes, and a user polling `/me`. No answer
may be a 5xx, every answer must be stored, and every `/me` answers (its p99 is printed, not
asserted).

The pool has its default 10 (+10 overflow) connections: a request that kept its connection
through a turn, an SSE stream or a slow body would exhaust it within the first twenty requests.
(`test_bounded_resources.py` checks directly that none is checked out meanwhile.)
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import zips
from tests.support.cluster import Cluster, cluster_env
from tests.support.instant_gateway import ANSWER

# On both databases (the `db_backend` fixture). On SQLite the writes take turns for the one write
# lock, each waiting up to SKILLHIVE_DATABASE_BUSY_TIMEOUT (backend/db/engine.py).
pytestmark = pytest.mark.slow

JSON_CHATS = 64
SSE_CHATS = 200
UPLOADS = 16
TRICKLED_BYTES = 5  # the last bytes of each upload arrive one at a time...
TRICKLE_INTERVAL_S = 2.0  # ...a byte every 2 s: each upload stays open ~10 s, through the chats
# Each answer's delay. The gateway runs SKILLHIVE_EMBEDDED_TURN_CONCURRENCY (16) turns at once, so
# the 264 turns take about 8 s: all of them while the uploads are still trickling.
MODEL_DELAY_S = 0.5
RAMP_S = 4.0  # users arrive over this long, not in one instant; the rest wait for a turn slot
TURNS_PER_USER = 8  # the default per-user limit: users run their turns side by side
ADMIN_TOKEN = "load-test-admin-token-0123456789abcdef"
GHOST = {
    "apiVersion": "skillhive.io/v1",
    "kind": "Ghost",
    "metadata": {"name": "loadbot"},
    "spec": {"systemPrompt": "Answer briefly.", "model": {"name": "offline"}},
}


@pytest.fixture
def server_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """The gateway in a process of its own, as deployed: the clients' work is not its work."""
    env = cluster_env(
        database_url,
        "",  # embedded mode: turns run in the gateway
        tmp_path / "data",
        SKILLHIVE_BOOTSTRAP_ADMIN_TOKEN=ADMIN_TOKEN,
        SKILLHIVE_DATABASE_POOL_TIMEOUT=30,
        INSTANT_GATEWAY_DELAY_S=MODEL_DELAY_S,
    )
    cluster = Cluster(tmp_path, env)
    gateway = cluster.spawn_gateway(["tests.support.instant_gateway"])
    try:
        cluster.wait_ready(gateway, deadline_s=180)  # a loaded machine imports slowly
        assert gateway.url is not None
        yield gateway.url
    finally:
        cluster.stop_all()


class Statuses:
    """Every response's status, counted by an httpx event hook."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []

    async def hook(self, response: httpx.Response) -> None:
        self.seen.append((response.status_code, f"{response.request.method} {response.url.path}"))

    def server_errors(self) -> list[tuple[int, str]]:
        return [s for s in self.seen if s[0] >= 500]


@pytest.fixture
async def http(server_url: str) -> AsyncIterator[tuple[httpx.AsyncClient, Statuses]]:
    statuses = Statuses()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=400)
    async with httpx.AsyncClient(
        base_url=server_url,
        limits=limits,
        timeout=httpx.Timeout(60.0),
        event_hooks={"response": [statuses.hook]},
    ) as client:
        yield client, statuses


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def ok(response: httpx.Response, status: int = 200) -> Any:
    if response.status_code != status:
        await response.aread()
        raise AssertionError(f"{response.status_code}: {response.text}")
    return response.json()


async def make_users(client: httpx.AsyncClient, count: int) -> list[str]:
    admin = bearer(ADMIN_TOKEN)

    async def one(i: int) -> str:
        created = await ok(
            await client.post("/api/v1/users", json={"name": f"load{i}"}, headers=admin), 201
        )
        return str(created["token"])

    users = []
    for start in range(0, count, 16):  # the set-up is not the load
        users += await asyncio.gather(*(one(i) for i in range(start, min(count, start + 16))))
    return users


async def conversation(client: httpx.AsyncClient, token: str) -> str:
    body = {"ghost": "public/loadbot"}
    created = await ok(
        await client.post("/api/v1/conversations", json=body, headers=bearer(token)), 201
    )
    return str(created["id"])


async def json_chat(client: httpx.AsyncClient, token: str, cid: str) -> None:
    url = f"/api/v1/conversations/{cid}/messages"
    answer = await ok(await client.post(url, json={"content": "hello"}, headers=bearer(token)))
    assert answer["content"] == ANSWER


async def sse_chat(client: httpx.AsyncClient, token: str, cid: str) -> None:
    headers = {**bearer(token), "Accept": "text/event-stream"}
    url = f"/api/v1/conversations/{cid}/messages"
    async with client.stream("POST", url, json={"content": "hello"}, headers=headers) as stream:
        assert stream.status_code == 200, await stream.aread()
        events = [line async for line in stream.aiter_lines() if line.startswith("event: ")]
    assert events[-1] == "event: done", events


async def trickled_upload(
    client: httpx.AsyncClient, token: str, name: str, *, trickle: int = TRICKLED_BYTES
) -> None:
    archive = zips.build(
        {"SKILL.md": f"---\nname: {name}\ndescription: Uploaded slowly.\n---\nBody.\n"},
        folder=name,
    )

    async def body() -> AsyncIterator[bytes]:
        yield archive[: len(archive) - trickle]
        for i in range(len(archive) - trickle, len(archive)):
            await asyncio.sleep(TRICKLE_INTERVAL_S)  # the client's pace, not a wait on the server
            yield archive[i : i + 1]

    headers = {
        **bearer(token),
        "Content-Type": "application/zip",
        "Content-Length": str(len(archive)),
    }
    url = "/api/v1/namespaces/load/skills"
    await ok(await client.post(url, content=body(), headers=headers), 201)


# `/me` is timed from a process of its own: this one reads hundreds of streams, and a thread here
# would wait for their interpreter lock (timing the client, not the server).
POLL_ME = """
import json, os, sys, time
import httpx
url, token, stop = sys.argv[1:4]
latencies = []
with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
    while not os.path.exists(stop):
        started = time.perf_counter()
        response = c.get("/api/v1/me")
        latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            sys.exit(f"/me answered {response.status_code}: {response.text}")
        time.sleep(0.05)
print(json.dumps(latencies))
"""


async def poll_me(base_url: str, token: str, stop: Path) -> list[float]:
    """`/me` timings until `stop` exists."""
    poller = await asyncio.create_subprocess_exec(
        sys.executable, "-c", POLL_ME, base_url, token, str(stop), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await poller.communicate()
    assert poller.returncode == 0
    latencies: list[float] = json.loads(out)
    return latencies


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@pytest.mark.timeout(300)
async def test_json_sse_chats_slow_uploads_and_me_together_give_no_5xx_and_store_every_answer(
    http: tuple[httpx.AsyncClient, Statuses], tmp_path: Path
) -> None:
    client, statuses = http
    ghost = await client.post("/api/v1/public/ghosts", json=GHOST, headers=bearer(ADMIN_TOKEN))
    await ok(ghost, 201)
    chats = JSON_CHATS + SSE_CHATS
    tokens = await make_users(client, chats // TURNS_PER_USER + 1)
    chatters, watcher = tokens[:-1], tokens[-1]
    owners = [chatters[i // TURNS_PER_USER] for i in range(chats)]
    setup = asyncio.Semaphore(16)  # the set-up is not the load

    async def prepared(token: str) -> str:
        async with setup:
            return await conversation(client, token)

    cids = list(await asyncio.gather(*(prepared(t) for t in owners)))
    # A warm server: the first turn and upload import and build what later ones reuse.
    await json_chat(client, watcher, await conversation(client, watcher))
    await trickled_upload(client, watcher, "warm-up", trickle=0)
    statuses.seen.clear()  # the load starts here

    stop = tmp_path / "stop-polling"
    poller = asyncio.create_task(poll_me(str(client.base_url), watcher, stop))
    uploads = [
        asyncio.create_task(trickled_upload(client, chatters[i % len(chatters)], f"slow-{i}"))
        for i in range(UPLOADS)
    ]

    async def chat(i: int) -> None:
        await asyncio.sleep(RAMP_S * i / chats)  # users arrive over RAMP_S, not in one instant
        chat = json_chat if i % 4 == 0 and i // 4 < JSON_CHATS else sse_chat
        await chat(client, owners[i], cids[i])

    turns = [chat(i) for i in range(chats)]
    try:
        await asyncio.gather(*turns, *uploads)
    finally:
        stop.touch()
    latencies = await poller

    assert statuses.server_errors() == []
    assert len(statuses.seen) >= chats + UPLOADS
    for owner, cid in zip(owners, cids, strict=True):
        url = f"/api/v1/conversations/{cid}/messages"
        stored = (await ok(await client.get(url, headers=bearer(owner))))["items"]
        assert [(m["role"], m["status"]) for m in stored] == [("user", "ok"), ("assistant", "ok")]
        assert stored[1]["content"] == ANSWER
    # Every /me answered 200 (the poller fails otherwise). Its latency is a wall-clock figure:
    # measured, not asserted (the team keeps timings out of tests); printed for the record.
    assert latencies
    print(f"/me p99 {p99(latencies) * 1000:.0f} ms over {len(latencies)} calls")
