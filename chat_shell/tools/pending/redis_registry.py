"""The multi-process registry: requests live in Redis, answers find the waiting process.

Each registry (one per process) has a random worker id and one pub/sub listener on
`{prefix}:worker:{id}`. `resolve` runs one Lua script on any process: it checks the owner,
claims the request, stores the answer and publishes it to the waiter's channel. Because the
answer is stored before it is published, the listener rechecks every local request each time
its subscription becomes live (start and every reconnect), and a waiter reaching its deadline
takes a stored answer instead of expiring, no answer is lost to a dropped connection.
Concurrent script calls share pipelines (`Pipeliner`), which keeps the per-request cost close to
that of a bare PUBLISH under load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from chat_shell.ports import FrontendChannel
from chat_shell.tools.pending import _lua as lua
from chat_shell.tools.pending._pipeliner import Pipeliner, Script
from chat_shell.tools.pending.base import Answer, Outcome, _RegistryCore
from chat_shell.tools.pending.errors import PendingRequestError, RegistryUnavailable

log = logging.getLogger(__name__)

REGISTER, RESOLVE, SETTLE = Script(lua.REGISTER), Script(lua.RESOLVE), Script(lua.SETTLE)

MIN_BACKOFF, MAX_BACKOFF = 0.05, 2.0  # listener reconnects and retried clean-ups
BACKSTOP_MARGIN = 30.0  # seconds a request key outlives its deadline if nobody settles it
CLOSE_TIMEOUT = 5.0  # for the last clean-up round trip


class InvalidAnswer(PendingRequestError):
    """The answer cannot be stored (not JSON-serializable)."""

    code = "invalid_answer"


class RedisPendingRequestRegistry(_RegistryCore):
    """Pass the process's Redis client; `start()` before `request`, `resolve` works any time."""

    def __init__(
        self,
        redis: aioredis.Redis,
        channel: FrontendChannel,
        *,
        prefix: str = "skillhive:pending",
        tombstone_ttl: float = 120.0,
        ping_interval: float = 15.0,
    ) -> None:
        super().__init__(channel)
        # A uuid, not the PID: PIDs repeat across containers and hosts sharing one Redis.
        self.worker_id = uuid.uuid4().hex
        self.prefix = prefix
        self.channel_name = f"{prefix}:worker:{self.worker_id}"
        self.listener_name = f"skillhive-pending-{self.worker_id}"
        self._redis = redis
        self._owns_redis = False
        self._tombstone_ms = max(1, round(tombstone_ttl * 1000))
        self._tombstone_ttl = tombstone_ttl
        self._ping_interval = ping_interval
        self._scripts = Pipeliner(redis)
        self._listener_redis: aioredis.Redis | None = None
        self._listener: asyncio.Task[None] | None = None
        self._settler: asyncio.Task[None] | None = None
        self._closing = False
        self._subscribed = asyncio.Event()
        self._to_settle: dict[str, bool] = {}  # request id -> expire it if still pending
        self._settle_wanted = asyncio.Event()

    @classmethod
    def from_url(
        cls, url: str, channel: FrontendChannel, **kwargs: Any
    ) -> RedisPendingRequestRegistry:
        """A registry with its own client, closed by `aclose`."""
        registry = cls(aioredis.Redis.from_url(url), channel, **kwargs)
        registry._owns_redis = True
        return registry

    def key(self, request_id: str) -> str:
        return f"{self.prefix}:req:{request_id}"

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self, *, ready_timeout: float = 10.0) -> None:
        """Subscribe the listener; raise `RegistryUnavailable` if Redis stays unreachable."""
        if self._listener is not None:
            return
        self._closing = False
        self._subscribed.clear()
        pool = self._redis.connection_pool
        # The listener's own connection, without redis-py's silent retries: this class
        # reconnects itself so that it sees every new subscription and rechecks after it.
        kwargs = {
            **pool.connection_kwargs,
            "retry": Retry(NoBackoff(), 0),
            "client_name": self.listener_name,  # so CLIENT LIST shows whose listener it is
        }
        listener_pool = aioredis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
        self._listener_redis = aioredis.Redis(connection_pool=listener_pool)
        self._listener = asyncio.create_task(
            self._listen(), name=f"pending-listen-{self.worker_id}"
        )
        self._settler = asyncio.create_task(
            self._settle_loop(), name=f"pending-settle-{self.worker_id}"
        )
        try:
            await asyncio.wait_for(self._subscribed.wait(), ready_timeout)
        except TimeoutError:
            await self.aclose()
            raise RegistryUnavailable("cannot subscribe to Redis for pending requests") from None

    async def aclose(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await _cancel(listener)
        # Nothing routes answers here any more: fail local waits now, not at their timeouts.
        for request_id, waiter in self._waiters.items():
            if not waiter.done():
                waiter.set_exception(RegistryUnavailable("the pending-request registry closed"))
                self._settle_later(request_id, expire=True)
        settler, self._settler = self._settler, None
        if settler is not None:
            # Let it flush what is queued (one round trip); it ends when the queue is empty.
            self._closing = True
            self._settle_wanted.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(settler), CLOSE_TIMEOUT)
            await _cancel(settler)
        if self._listener_redis is not None:
            await self._listener_redis.aclose(close_connection_pool=True)
            self._listener_redis = None
        if self._owns_redis:
            await self._redis.aclose()

    # --- storage hooks -------------------------------------------------------------------

    async def _register(self, request_id: str, user_id: int, timeout_s: float) -> None:
        if self._listener is None:
            raise RuntimeError("start() the registry before making requests")
        backstop_ms = round((timeout_s + self._tombstone_ttl + BACKSTOP_MARGIN) * 1000)
        args: list[str | int] = [str(user_id), self.worker_id, backstop_ms]
        try:
            await self._scripts.call(REGISTER, [self.key(request_id)], args)
        except (RedisError, OSError) as exc:
            raise RegistryUnavailable(f"cannot store the request in Redis: {exc}") from exc

    async def _claim(self, user_id: int, request_id: str, answer: Answer) -> Outcome:
        try:
            encoded = _encode(answer)
        except (TypeError, ValueError) as exc:
            raise InvalidAnswer(f"the answer is not JSON-serializable: {exc}") from exc
        args = [str(user_id), encoded, f"{self.prefix}:worker:", request_id]
        try:
            outcome = await self._scripts.call(RESOLVE, [self.key(request_id)], args)
        except (RedisError, OSError) as exc:
            raise RegistryUnavailable(f"cannot resolve the request in Redis: {exc}") from exc
        return Outcome(_text(outcome))

    async def _expire(self, request_id: str) -> Answer | None:
        try:
            stored = await self._scripts.call(
                SETTLE, [self.key(request_id)], [self._tombstone_ms, 1]
            )
        except (RedisError, OSError) as exc:
            log.warning("could not expire pending request %s: %s", request_id, exc)
            return None  # the key's TTL removes it
        return None if stored is None else _decode(stored)

    def _abandon(self, request_id: str) -> None:
        self._settle_later(request_id, expire=True)

    # --- settling (answer consumed -> tombstone; abandoned -> expired) -------------------

    def _settle_later(self, request_id: str, *, expire: bool) -> None:
        self._to_settle[request_id] = self._to_settle.get(request_id, False) or expire
        self._settle_wanted.set()

    async def _settle_many(self, batch: Iterable[tuple[str, bool]]) -> list[Any]:
        """SETTLE each request (one pipeline); returns what each call returned."""
        calls = [
            self._scripts.call(SETTLE, [self.key(rid)], [self._tombstone_ms, int(expire)])
            for rid, expire in batch
        ]
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results

    async def _settle_loop(self) -> None:
        backoff = MIN_BACKOFF
        while True:
            await self._settle_wanted.wait()
            self._settle_wanted.clear()
            batch, self._to_settle = self._to_settle, {}
            try:
                await self._settle_many(batch.items())
                backoff = MIN_BACKOFF
            except (RedisError, OSError) as exc:
                if self._closing:
                    return  # the keys' TTLs clean up
                log.warning("settling %d pending requests failed (%s); retrying", len(batch), exc)
                for request_id, expire in batch.items():
                    self._settle_later(request_id, expire=expire)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
            if self._closing and not self._to_settle:
                return

    # --- the listener --------------------------------------------------------------------

    async def _listen(self) -> None:
        assert self._listener_redis is not None
        backoff = MIN_BACKOFF
        while True:
            try:
                async with self._listener_redis.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel_name)
                    await self._pump(pubsub)
            except (RedisError, OSError) as exc:
                if self._subscribed.is_set():
                    log.warning("pending-request listener lost Redis (%s); reconnecting", exc)
                    backoff = MIN_BACKOFF
                self._subscribed.clear()
            except Exception:  # a listener that died would strand every wait of this process
                log.exception("pending-request listener failed; restarting it")
                self._subscribed.clear()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    async def _pump(self, pubsub: PubSub) -> None:
        loop = asyncio.get_running_loop()
        heard = loop.time()
        while True:
            message = await pubsub.get_message(timeout=self._ping_interval)
            if message is None:
                # A half-open connection never errors; a ping that gets no pong reveals it.
                if loop.time() - heard > 2 * self._ping_interval:
                    raise RedisConnectionError("the pub/sub connection stopped answering pings")
                await pubsub.ping()
                continue
            heard = loop.time()
            if message["type"] == "message":
                self._on_message(message["data"])
            elif message["type"] == "subscribe":
                # The subscription is live: answers published from now on reach us, and
                # anything answered while we were away is in Redis.
                await self._recheck()
                self._subscribed.set()

    def _on_message(self, data: bytes | str) -> None:
        request_id, _, encoded = _text(data).partition(" ")
        try:
            answer = _decode(encoded)
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring a malformed answer message for %r", request_id)
            return
        self._deliver(request_id, answer)
        self._settle_later(request_id, expire=False)

    async def _recheck(self) -> None:
        waiting = [rid for rid, waiter in self._waiters.items() if not waiter.done()]
        if not waiting:
            return
        stored = await self._settle_many((rid, False) for rid in waiting)
        for request_id, encoded in zip(waiting, stored, strict=True):
            if encoded is not None:
                self._deliver(request_id, _decode(encoded))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _encode(answer: Answer) -> str:
    fields = {"success": answer.success, "result": answer.result, "error": answer.error}
    return json.dumps(fields, separators=(",", ":"), allow_nan=False)


def _decode(encoded: bytes | str) -> Answer:
    fields = json.loads(encoded)
    return Answer(bool(fields["success"]), fields["result"], fields["error"])


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel and wait; cancel again if redis-py swallowed it (see `honour_cancellation`)."""
    while not task.done():
        task.cancel()
        await asyncio.wait((task,), timeout=1.0)
