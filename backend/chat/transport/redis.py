"""`RedisTransport` (scale-out mode): gateways submit turns to a Redis Stream that
`skillhive worker`s consume (backend/worker.py); envelopes come back on one pub/sub channel.

- Submit: the conversation claim is `SET NX` on `{prefix}turn-lock:{conversation_id}`; the user
  message is stored, then only ids go to the stream `{prefix}turns`.
- Cancel: published on `{prefix}cancel`; the worker running the turn stops it.
- Envelopes: each is published ONCE, on `{prefix}turn-events`. Every gateway holds one
  subscription to it and delivers locally: to SSE readers of the conversation and to its own
  Socket.IO rooms. Workers only publish.
- Browser answers reach the waiting worker through `RedisPendingRequestRegistry`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from backend.chat.transport.base import (
    Fanout,
    Listener,
    StoreUserMessage,
    TransportFrontend,
    turn_in_progress,
)
from backend.chat.transport.envelope import Envelope, TurnEnvelope, dumps, loads
from backend.errors import ServiceUnavailable
from backend.ops.tracing import inject
from chat_shell import RedisPendingRequestRegistry

log = logging.getLogger("skillhive.chat")

STREAM_MAXLEN = 100_000  # trimmed approximately: acknowledged history is not needed
PING_S = 15.0  # a silent subscription is pinged so a half-open connection is noticed
SUBSCRIBE_WAIT_S = 5.0  # an SSE reader waits this long for the gateway's subscription
MIN_BACKOFF_S, MAX_BACKOFF_S = 0.05, 2.0

# Release a key only if it still holds what we put there (never someone else's newer claim).
RELEASE_IF_VALUE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass(frozen=True)
class RedisKeys:
    """Every key and channel of the turn pipeline, under one prefix (`SKILLHIVE_REDIS_PREFIX`)."""

    prefix: str = "skillhive:"

    @property
    def stream(self) -> str:
        return f"{self.prefix}turns"

    @property
    def group(self) -> str:
        return f"{self.prefix.rstrip(':')}-workers"

    @property
    def cancel(self) -> str:
        return f"{self.prefix}cancel"

    @property
    def events(self) -> str:
        return f"{self.prefix}turn-events"

    @property
    def pending(self) -> str:
        return f"{self.prefix}pending"

    def lock(self, conversation_id: str) -> str:
        return f"{self.prefix}turn-lock:{conversation_id}"

    def lease(self, message_id: str | int) -> str:
        return f"{self.prefix}turn-lease:{message_id}"


class RedisTransport:
    def __init__(self, redis: aioredis.Redis, keys: RedisKeys, *, lock_ttl_s: int) -> None:
        self.redis = redis
        self.keys = keys
        self.lock_ttl_s = lock_ttl_s
        self.registry = RedisPendingRequestRegistry(
            redis, TransportFrontend(self), prefix=keys.pending
        )
        self._release = redis.register_script(RELEASE_IF_VALUE)
        self._fanout = Fanout()
        self._subscribed = asyncio.Event()
        self._first_try = asyncio.Event()  # the listener's first attempt ended, either way
        self._listener: asyncio.Task[None] | None = None
        self._listener_redis: aioredis.Redis | None = None

    # --- submit, cancel, the claim ------------------------------------------------------

    async def submit(
        self, conversation_id: str, user_id: int, store_user_message: StoreUserMessage
    ) -> int:
        key = self.keys.lock(conversation_id)
        claim = f"claim:{uuid.uuid4().hex}"
        if not await self.redis.set(key, claim, nx=True, ex=self.lock_ttl_s):
            raise turn_in_progress(conversation_id)
        try:
            message_id = await store_user_message()
        except BaseException:
            await self._release(keys=[key], args=[claim])
            raise
        # From here the lock names the message, so the worker that answers it can release it.
        await self.redis.set(key, str(message_id), xx=True, ex=self.lock_ttl_s)
        fields: dict[Any, Any] = {
            "conversation_id": conversation_id,
            "message_id": str(message_id),
            "user_id": str(user_id),
        }
        fields.update(inject())  # ops: the trace context rides in the entry (W3C traceparent)
        await self.redis.xadd(
            self.keys.stream,
            fields,
            maxlen=STREAM_MAXLEN,
            approximate=True,
        )
        return message_id

    async def release(self, conversation_id: str, message_id: int) -> None:
        await self._release(keys=[self.keys.lock(conversation_id)], args=[str(message_id)])

    async def cancel(self, conversation_id: str) -> bool:
        if not await self.redis.exists(self.keys.lock(conversation_id)):
            return False
        await self.redis.publish(self.keys.cancel, conversation_id)
        return True

    # --- envelopes ----------------------------------------------------------------------

    async def publish(self, envelope: Envelope) -> None:
        await self.redis.publish(self.keys.events, dumps(envelope))

    @asynccontextmanager
    async def subscribe(
        self, conversation_id: str, *, ends_only: bool = False
    ) -> AsyncIterator[AsyncIterator[TurnEnvelope]]:
        # Registered locally before the caller submits; the gateway's one subscription must be
        # live, or events of the turn could be published before anyone hears them.
        async with self._fanout.subscribe(conversation_id, ends_only=ends_only) as envelopes:
            try:
                await asyncio.wait_for(self._subscribed.wait(), SUBSCRIBE_WAIT_S)
            except TimeoutError:
                raise ServiceUnavailable("turn events are unavailable (Redis)") from None
            yield envelopes

    def listen(self, listener: Listener) -> None:
        self._fanout.listen(listener)

    # --- lifecycle: the gateway's subscription --------------------------------------------

    async def start(self) -> None:
        """Gateways: subscribe to the envelopes (and keep re-subscribing after a Redis loss)."""
        if self._listener is not None:
            return
        pool = self.redis.connection_pool
        # Its own connection, without redis-py's silent retries: reconnecting is ours.
        kwargs = {**pool.connection_kwargs, "retry": Retry(NoBackoff(), 0)}
        self._listener_redis = aioredis.Redis(
            connection_pool=aioredis.ConnectionPool(
                connection_class=pool.connection_class, **kwargs
            )
        )
        self._listener = asyncio.create_task(self._listen(), name="turn-events")
        # Serve once subscribed; an unreachable Redis must not hold the gateway's start-up
        # (readiness reports it), so stop waiting when the first attempt has failed.
        subscribed = asyncio.create_task(self._subscribed.wait())
        failed = asyncio.create_task(self._first_try.wait())
        await asyncio.wait(
            {subscribed, failed}, timeout=SUBSCRIBE_WAIT_S, return_when="FIRST_COMPLETED"
        )
        subscribed.cancel()
        failed.cancel()
        if not self._subscribed.is_set():
            log.warning("turn events: Redis not reachable yet; retrying in the background")

    async def aclose(self) -> None:
        listener, self._listener = self._listener, None
        while listener is not None and not listener.done():
            listener.cancel()  # again if redis-py swallowed it
            await asyncio.wait({listener}, timeout=1.0)
        if self._listener_redis is not None:
            await self._listener_redis.aclose(close_connection_pool=True)
            self._listener_redis = None

    async def _listen(self) -> None:
        assert self._listener_redis is not None
        backoff = MIN_BACKOFF_S
        while True:
            try:
                async with self._listener_redis.pubsub() as pubsub:
                    await pubsub.subscribe(self.keys.events)
                    await self._pump(pubsub)
            except (RedisError, OSError) as exc:
                self._first_try.set()
                if self._subscribed.is_set():
                    log.warning("turn events: lost Redis (%s); resubscribing", exc)
                    backoff = MIN_BACKOFF_S
                self._subscribed.clear()
            except Exception:  # a dead listener would silence every turn on this gateway
                self._first_try.set()
                log.exception("turn events: listener failed; restarting it")
                self._subscribed.clear()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _pump(self, pubsub: PubSub) -> None:
        loop = asyncio.get_running_loop()
        heard = loop.time()
        while True:
            message = await pubsub.get_message(timeout=PING_S)
            if message is None:
                if loop.time() - heard > 2 * PING_S:
                    raise RedisConnectionError("the pub/sub connection stopped answering pings")
                await pubsub.ping()
                continue
            heard = loop.time()
            if message["type"] == "subscribe":
                self._subscribed.set()
            elif message["type"] == "message":
                try:
                    envelope = loads(message["data"])
                except ValueError:
                    log.warning("turn events: dropped a malformed envelope")
                    continue
                await self._fanout.deliver(envelope)
