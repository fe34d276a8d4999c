"""Chat benchmark: `python -m bench.chat` (a gateway process on loopback, embedded SQLite,
instant fake model; the client and the in-process baseline run in this process).

1. A REST chat turn (JSON, sent with aiohttp) and a Socket.IO chat turn (sent with the wire
   client, bench/_sio_client.py; python-socketio's client is timed beside it) through the gateway,
   each timed side by side (bench/_util.compare) with the floor: chat_shell's `run_turn` called
   in-process plus the turn's unavoidable persistence as raw SQL on the same database (a token
   lookup by hash, one history read, two inserts). Targets <= 1.5x; also the gateway's p50/p99
   overhead per turn.
   The gateway runs with the defaults an operator gets.
2. 100 concurrent Socket.IO conversations (python-socketio's client) for 30 s: turns/s and
   errors (target 0 errors).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import aiosqlite
import httpx
import socketio

from backend.config import Settings
from backend.db.migrate import upgrade
from bench._gateway import instant_model
from bench._sio_client import WireSocket
from bench._util import Comparison, compare
from chat_shell.agent import run_turn
from chat_shell.contracts import HistoryMessage, SkillSpec, TurnRequest
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource

GHOST = {
    "apiVersion": "skillhive.io/v1",
    "kind": "Ghost",
    "metadata": {"name": "bench"},
    "spec": {
        "systemPrompt": "You are a helpful assistant.",
        "skills": ["skillhive-skill-authoring"],
        "model": {"name": "offline"},  # replaced by the injected instant model
    },
}


async def user_token(settings: Settings) -> str:
    from backend.auth import service
    from backend.db.engine import create_engine, create_sessionmaker

    engine = create_engine(settings.effective_database_url)
    async with create_sessionmaker(engine)() as session:
        user = await service.create_user(session, "bench", admin=False)
        token = (await service.issue_token(session, user, "bench")).secret
        await session.commit()
    await engine.dispose()
    return token


class Conversations:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def new(self) -> str:
        response = await self.client.post("/api/v1/conversations", json={"ghost": "dev/bench"})
        response.raise_for_status()
        return str(response.json()["id"])


class SocketChat:
    """One Socket.IO connection that can run turns in many conversations."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.sio = socketio.AsyncClient(reconnection=False)
        self.waiters: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.sio.on("chat:done", self._done, namespace="/chat")
        self.sio.on("chat:error", self._finished, namespace="/chat")

    async def _done(self, data: dict[str, Any]) -> None:
        await self._finished({**data, "ok": True})

    async def _finished(self, data: dict[str, Any]) -> None:
        waiter = self.waiters.pop(data.get("conversation_id") or "", None)
        if waiter is not None and not waiter.done():
            waiter.set_result(data)

    async def connect(self) -> None:
        await self.sio.connect(
            self.url,
            namespaces=["/chat"],
            auth={"token": self.token},
            transports=["websocket"],
            wait_timeout=20,
        )

    async def join(self, cid: str) -> None:
        ack = await self.sio.call("conversation:join", {"conversation_id": cid}, namespace="/chat")
        assert ack["ok"], ack

    async def turn(self, cid: str, content: str = "hello") -> dict[str, Any]:
        waiter = asyncio.get_running_loop().create_future()
        self.waiters[cid] = waiter
        ack = await self.sio.call(
            "chat:send", {"conversation_id": cid, "content": content}, namespace="/chat", timeout=30
        )
        if not ack.get("ok"):
            self.waiters.pop(cid, None)
            raise RuntimeError(f"chat:send refused: {ack}")
        return await asyncio.wait_for(waiter, 30)


def sqlite_now() -> str:
    """A timestamp as SQLAlchemy's SQLite dialect stores one."""
    return time.strftime("%Y-%m-%d %H:%M:%S.000000", time.gmtime())


def floor_turn(
    db: aiosqlite.Connection, token: str, conversations: Iterator[str], skill: SkillSpec
) -> Callable[[], Awaitable[None]]:
    """The least a turn can do: authenticate, read history, store the message, run chat_shell,
    store the answer. Raw SQL on the gateway's own database, chat_shell in-process."""
    model = instant_model()
    source, frontend = InMemoryPackageSource(), InMemoryFrontendChannel()

    async def run() -> None:
        cid = next(conversations)
        digest = hashlib.sha256(token.encode()).hexdigest()
        async with db.execute(
            "SELECT api_tokens.id, users.id, users.is_active, api_tokens.revoked_at,"
            " api_tokens.expires_at FROM api_tokens JOIN users ON users.id = api_tokens.user_id"
            " WHERE api_tokens.token_hash = ?",
            (digest,),
        ) as cursor:
            row = await cursor.fetchone()
        assert row is not None and row[2]
        async with db.execute(
            "SELECT role, content, tool_calls, loaded_skills FROM messages"
            " WHERE conversation_id = ? AND status = 'ok' ORDER BY id",
            (cid,),
        ) as cursor:
            history = [
                HistoryMessage(
                    role=role,
                    content=content,
                    tool_calls=json.loads(calls),
                    loaded_skills=json.loads(skills),
                )
                for role, content, calls, skills in await cursor.fetchall()
            ]
        cursor = await db.execute(
            "INSERT INTO messages (conversation_id, role, content, status, tool_calls,"
            " loaded_skills, usage, created_at) VALUES (?, 'user', ?, 'ok', '[]', '[]', '{}', ?)",
            (cid, "hello", sqlite_now()),
        )
        message_id = cursor.lastrowid
        await db.commit()
        request = TurnRequest(
            conversation_id=cid,
            user_id=int(row[1]),
            system_prompt=GHOST["spec"]["systemPrompt"],  # type: ignore[index]
            skills=[skill],
            history=history,
            user_message="hello",
        )
        answer = ""
        async for event in run_turn(request, package_source=source, frontend=frontend, model=model):
            if event.type == "error":
                raise RuntimeError(event.message)
            if event.type == "done":
                answer = event.text
        await db.execute(
            "INSERT INTO messages (conversation_id, role, content, status, reply_to, tool_calls,"
            " loaded_skills, usage, created_at) VALUES (?, 'assistant', ?, 'ok', ?, '[]', '[]',"
            " '{}', ?)",
            (cid, answer, message_id, sqlite_now()),
        )
        await db.commit()

    return run


async def soak(
    url: str, token: str, conversations: Conversations, clients: int, seconds: float
) -> tuple[int, int]:
    sockets = [SocketChat(url, token) for _ in range(clients)]
    await asyncio.gather(*(s.connect() for s in sockets))
    cids = [await conversations.new() for _ in sockets]
    await asyncio.gather(*(s.join(c) for s, c in zip(sockets, cids, strict=True)))
    deadline = time.monotonic() + seconds
    turns = errors = 0
    kinds: Counter[str] = Counter()

    async def loop(sock: SocketChat, cid: str) -> None:
        nonlocal turns, errors
        while time.monotonic() < deadline:
            try:
                result = await sock.turn(cid)
                if result.get("ok"):
                    turns += 1
                else:
                    errors += 1
                    kinds[str(result.get("code"))] += 1
            except Exception as exc:
                errors += 1
                kinds[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1

    started = time.monotonic()
    await asyncio.gather(*(loop(s, c) for s, c in zip(sockets, cids, strict=True)))
    elapsed = time.monotonic() - started
    await asyncio.gather(*(s.sio.disconnect() for s in sockets))
    for kind, count in kinds.most_common(5):
        print(f"  error x{count}: {kind}")
    return round(turns / elapsed), errors


async def run(pairs: int, clients: int, seconds: float) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="skillhive-bench-chat-"))
    settings = Settings(data_dir=workdir, database_url=f"sqlite+aiosqlite:///{workdir}/chat.db")
    upgrade(settings.effective_database_url)
    with gateway_process(settings) as url:
        token = await user_token(settings)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            (await client.post("/api/v1/namespaces/dev/ghosts", json=GHOST)).raise_for_status()
            skill_crd = (await client.get("/api/v1/public/skills/skillhive-skill-authoring")).json()
            skill = SkillSpec(
                name=skill_crd["metadata"]["name"],
                description=skill_crd["spec"]["description"],
                prompt=skill_crd["spec"]["prompt"],
                public=True,
            )
            conversations = Conversations(client)
            db = await aiosqlite.connect(settings.effective_database_url.split("///", 1)[1])
            floor_ids = iter([await conversations.new() for _ in range(2 * (pairs + 20))])
            direct = floor_turn(db, token, floor_ids, skill)

            rest_ids = iter([await conversations.new() for _ in range(pairs + 20)])
            # The timed client is aiohttp's: httpx spends about half a millisecond more of this
            # process's CPU per request, which is the client's cost, not the gateway's.
            async with aiohttp.ClientSession(url, headers=headers) as light:
                await client_costs(client, light)

                async def rest_turn() -> None:
                    path = f"/api/v1/conversations/{next(rest_ids)}/messages"
                    async with light.post(path, json={"content": "hello"}) as response:
                        body = await response.json()
                    assert response.status == 200 and body["status"] == "ok", body

                rest = await compare(rest_turn, direct, pairs=pairs)
            report("REST", rest)
            print(f"rest_ratio: {rest.median_ratio:.2f} (target <= 1.5)")

            # The timed client is the least a Socket.IO client does (bench/_sio_client.py);
            # python-socketio's costs are printed beside it.
            async with aiohttp.ClientSession() as session:
                wire = WireSocket(url, token)
                await wire.connect(session)
                await socket_client_costs(url, token, conversations, wire, pairs)
                sio_ids = [await conversations.new() for _ in range(pairs + 20)]
                for cid in sio_ids:
                    assert (await wire.call("conversation:join", {"conversation_id": cid}))["ok"]
                sio_iter = iter(sio_ids)

                async def sio_turn() -> None:
                    result = await wire.turn(next(sio_iter))
                    assert result.get("ok") and result["message"]["status"] == "ok", result

                sio = await compare(sio_turn, direct, pairs=pairs)
                await wire.close()
            report("Socket.IO", sio)
            print(f"sio_ratio: {sio.median_ratio:.2f} (target <= 1.5)")
            await db.close()

            turns_per_s, errors = await soak(url, token, conversations, clients, seconds)
            print(
                f"soak: {clients} concurrent Socket.IO conversations for {seconds:.0f} s: "
                f"{turns_per_s} turns/s, {errors} errors (target 0)"
            )
    print(
        f"RESULT chat rest_ratio={rest.median_ratio:.2f} sio_ratio={sio.median_ratio:.2f} "
        f"rest_overhead_p50_ms={rest.overhead_p50_ms:.2f} "
        f"rest_overhead_p99_ms={rest.overhead_p99_ms:.2f} "
        f"sio_overhead_p50_ms={sio.overhead_p50_ms:.2f} "
        f"sio_overhead_p99_ms={sio.overhead_p99_ms:.2f} "
        f"turns_per_s={turns_per_s} errors={errors}"
    )


async def client_costs(heavy: httpx.AsyncClient, light: aiohttp.ClientSession) -> None:
    """The two clients' round trip of `GET /healthz` side by side: what the client itself adds."""

    async def with_httpx() -> None:
        (await heavy.get("/healthz")).raise_for_status()

    async def with_aiohttp() -> None:
        async with light.get("/healthz") as response:
            response.raise_for_status()
            await response.read()

    costs = await compare(with_httpx, with_aiohttp, pairs=200)
    print(
        f"client round trip (GET /healthz): httpx {costs.candidate_ms:.2f} ms, aiohttp "
        f"{costs.baseline_ms:.2f} ms; the REST turns are timed with aiohttp"
    )


async def socket_client_costs(
    url: str, token: str, conversations: Conversations, wire: WireSocket, pairs: int
) -> None:
    """A turn over python-socketio's client and over the wire client, side by side: what the
    client itself adds to a Socket.IO turn."""
    sock = SocketChat(url, token)
    await sock.connect()
    heavy_ids = [await conversations.new() for _ in range(pairs + 20)]
    wire_ids = [await conversations.new() for _ in range(pairs + 20)]
    for heavy_id, wire_id in zip(heavy_ids, wire_ids, strict=True):
        await sock.join(heavy_id)
        assert (await wire.call("conversation:join", {"conversation_id": wire_id}))["ok"]
    heavy_iter, wire_iter = iter(heavy_ids), iter(wire_ids)

    async def with_python_socketio() -> None:
        assert (await sock.turn(next(heavy_iter))).get("ok")

    async def with_wire() -> None:
        assert (await wire.turn(next(wire_iter))).get("ok")

    costs = await compare(with_python_socketio, with_wire, pairs=pairs)
    await sock.sio.disconnect()
    print(
        f"client Socket.IO turn: python-socketio {costs.candidate_ms:.2f} ms, wire client "
        f"{costs.baseline_ms:.2f} ms (x{costs.median_ratio:.2f}); the Socket.IO turns are timed "
        "with the wire client"
    )


def report(label: str, result: Comparison) -> None:
    print(
        f"{label} turn: {result.candidate_ms:.2f} ms vs floor (chat_shell direct + raw SQL)"
        f" {result.baseline_ms:.2f} ms; gateway overhead per turn"
        f" p50 {result.overhead_p50_ms:.2f} ms, p99 {result.overhead_p99_ms:.2f} ms"
    )


@contextmanager
def gateway_process(settings: Settings) -> Iterator[str]:
    port = free_port()
    # The defaults an operator gets: no SKILLHIVE_* setting leaks in from this shell.
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SKILLHIVE_")},
        "SKILLHIVE_DATABASE_URL": settings.effective_database_url,
        "SKILLHIVE_DATA_DIR": str(settings.data_dir),
        "SKILLHIVE_LOG_LEVEL": "WARNING",
        # One user's sockets here send turns back to back, far beyond a person's pace, and the
        # soak's 100 sockets are all one bench user's: no rate limit, no connection cap.
        "SKILLHIVE_SOCKET_EVENTS_PER_SECOND": "1000000",
        "SKILLHIVE_SOCKET_EVENT_BURST": "1000000",
        "SKILLHIVE_SOCKET_CONNECTIONS_PER_USER": "1000000",
        # One bench user stands in for the soak's many people: no per-user turn cap.
        "SKILLHIVE_MAX_CONCURRENT_TURNS_PER_USER": "1000000",
    }
    process = subprocess.Popen([sys.executable, "-m", "bench._gateway", str(port)], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the gateway did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(20)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    asyncio.run(run(args.pairs, args.clients, args.seconds))


if __name__ == "__main__":
    main()
