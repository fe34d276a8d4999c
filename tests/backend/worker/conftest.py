"""A `TurnWorker` on the session's real Redis, with a scripted runner and its own key prefix."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from backend.chat.transport import RedisKeys
from tests.support.worker import Bench, ScriptedRunner


@pytest.fixture
async def bench(redis_url: str) -> AsyncIterator[Bench]:
    redis = aioredis.Redis.from_url(redis_url)
    keys = RedisKeys(prefix=f"test-{uuid.uuid4().hex[:8]}:")
    await redis.xgroup_create(keys.stream, keys.group, id="0", mkstream=True)
    bench = Bench(redis, keys, ScriptedRunner())
    try:
        yield bench
    finally:
        for gate in bench.runner.gates.values():
            gate.set()
        for worker, task in bench.workers:
            worker.stop()
            await task
        await redis.delete(keys.stream)
        await redis.aclose()
