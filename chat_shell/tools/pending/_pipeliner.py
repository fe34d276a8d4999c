"""Concurrent Lua script calls, coalesced into shared pipelines.

Under load most of the cost of a Redis call is the client's per-command work, not the server's:
a call that arrives while a batch is in flight joins the next one, so N concurrent calls cost
one pipeline round trip. A lone call goes out at once, so idle latency does not grow. Each
script still runs atomically on the server; batching only shares the socket write and read.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, RedisError

Arg = str | int


@dataclass(frozen=True)
class Script:
    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())


@dataclass(frozen=True)
class _Call:
    script: Script
    keys: Sequence[str]
    args: Sequence[Arg]
    result: asyncio.Future[Any]


class Pipeliner:
    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis
        self._queue: list[_Call] = []
        self._flusher: asyncio.Task[None] | None = None

    async def call(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """EVALSHA `script`; raises what the script or the connection raised."""
        result: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append(_Call(script, keys, args, result))
        if self._flusher is None:
            # A task, not the caller: a cancelled caller must not strand the others' calls.
            self._flusher = asyncio.create_task(self._flush())
        return await result

    async def _flush(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    results = await self._execute(batch)
                except (RedisError, OSError) as exc:
                    results = [exc] * len(batch)
                for call, result in zip(batch, results, strict=True):
                    if call.result.done():  # its caller was cancelled
                        continue
                    if isinstance(result, BaseException):
                        call.result.set_exception(result)
                    else:
                        call.result.set_result(result)
        finally:
            self._flusher = None

    async def _execute(self, batch: list[_Call]) -> list[Any]:
        results = await self._send(batch)
        # After a Redis restart or SCRIPT FLUSH: load and rerun what did not run at all.
        missing = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
        if missing:
            for script in {batch[i].script for i in missing}:
                await self._redis.script_load(script.source)
            rerun = await self._send([batch[i] for i in missing])
            for i, result in zip(missing, rerun, strict=True):
                results[i] = result
        return results

    async def _send(self, batch: list[_Call]) -> list[Any]:
        # Plain EVALSHA, not redis-py's Script objects: those cost a SCRIPT EXISTS round trip
        # on every pipeline.
        async with self._redis.pipeline(transaction=False) as pipe:
            for call in batch:
                pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
            return list(await pipe.execute(raise_on_error=False))
