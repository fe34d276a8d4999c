"""`skillhive worker`: runs chat turns from the Redis Stream (scale-out mode, docs/architecture.md).

Each worker reads the consumer group with bounded concurrency. A turn is run under a lease
(`SET NX` with a short TTL) that a heartbeat keeps alive, together with the stream entry's idle
time, so another worker reclaims an entry (XAUTOCLAIM) only once its worker stopped
heartbeating: a turn never runs twice at the same time. A reclaimed turn runs again from the
start; the message store keeps one answer per user message, so a retry cannot duplicate it.

Slots are shared fairly: one user runs at most `user_slots` turns at once in a worker. A user's
further entries wait in the worker (kept alive by the heartbeat, so nobody reclaims them), and a
freed slot goes to the next waiting user round-robin, so one user's slow turns cannot keep
another user's turn waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import uuid
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import redis.asyncio as aioredis
from langchain_core.language_models import BaseChatModel
from opentelemetry.trace import SpanKind
from redis.exceptions import RedisError, ResponseError

from backend.chat.composition import build_worker
from backend.chat.sandbox import create_sandbox, log_sandbox
from backend.chat.transport import RedisKeys, RedisTransport
from backend.chat.transport.local import TurnRunning
from backend.chat.transport.redis import RELEASE_IF_VALUE
from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.heartbeat import heartbeat_path, keep_beating
from backend.ops.memory import freeze_startup_objects
from backend.ops.metrics import DISPATCH_RECLAIMS, observe_stream_lag
from backend.ops.quotas import Quotas, counters_for
from backend.ops.serve import start_worker_metrics
from backend.ops.tracing import configure as configure_tracing
from backend.ops.tracing import extract, tracer
from backend.redis_client import create_redis
from backend.secrets.cipher import load_cipher
from chat_shell import honour_cancellation

log = logging.getLogger("skillhive.worker")

BLOCK_MS = 2_000
RETRY_S = 0.5  # back-off after a Redis error (e.g. a restart), doubling up to 8 s

EXTEND_IF_VALUE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


@dataclass(frozen=True)
class Entry:
    entry_id: str
    conversation_id: str
    message_id: str
    user: str  # the user id ("" for entries written before it was recorded)
    # ops: the sender's trace context (W3C `traceparent`), so the turn joins its trace
    trace: dict[str, str] = field(default_factory=dict, compare=False)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _entry(entry_id: bytes | str, fields: dict[bytes | str, bytes | str]) -> Entry | None:
    data = {_text(k): _text(v) for k, v in fields.items()}
    if "conversation_id" not in data or not data.get("message_id", "").isdigit():
        return None
    trace = {k: v for k, v in data.items() if k in ("traceparent", "tracestate")}
    return Entry(
        _text(entry_id), data["conversation_id"], data["message_id"], data.get("user_id", ""), trace
    )


class TurnWorker:
    def __init__(
        self,
        redis: aioredis.Redis,
        runner: TurnRunning,
        *,
        concurrency: int,
        user_slots: int | None = None,
        keys: RedisKeys | None = None,
        lease_s: float = 15.0,
        drain_s: float = 30.0,
        lock_ttl_s: int = 120,
    ) -> None:
        self.redis = redis
        self.keys = keys or RedisKeys()
        self.drain_s = drain_s
        self.lock_ttl_s = lock_ttl_s
        # An entry nobody heartbeated for a lease belongs to a dead worker; heartbeats come
        # five times per lease so a slow event loop does not lose a live turn.
        self.lease_ms = max(1, round(lease_s * 1000))
        self.heartbeat_s = lease_s / 5
        self.reclaim_every_s = lease_s / 3
        self.runner = runner
        self.consumer = f"worker-{uuid.uuid4().hex[:12]}"  # unique per process, not a PID
        self.concurrency = concurrency
        self.user_slots = min(user_slots or concurrency, concurrency)
        self._slots = asyncio.Semaphore(concurrency)
        # conversation id -> (the turn's task, the user message it answers)
        self._running: dict[str, tuple[asyncio.Task[Any], int]] = {}
        self._per_user: dict[str, int] = {}  # user -> turns running
        # user -> entries read but waiting for one of the user's slots (round-robin order)
        self._waiting: OrderedDict[str, deque[Entry]] = OrderedDict()
        self.max_waiting = concurrency * 4  # read no further ahead than this
        self._room = asyncio.Event()  # set while fewer entries than that wait
        self._room.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._release = redis.register_script(RELEASE_IF_VALUE)
        self._extend = redis.register_script(EXTEND_IF_VALUE)
        self._stopping = asyncio.Event()

    # --- lifecycle -----------------------------------------------------------------------

    async def run(self) -> None:
        """Until `stop()`: read new entries, reclaim abandoned ones, honour cancellations."""
        loops = [self._read_loop(), self._reclaim_loop(), self._cancel_loop(), self._keep_waiting()]
        runners = [asyncio.create_task(loop) for loop in loops]
        try:
            await self._stopping.wait()
        finally:
            while pending := [task for task in runners if not task.done()]:
                for task in pending:
                    task.cancel()  # again if redis-py swallowed the last one
                await asyncio.wait(pending, timeout=1.0)
            await asyncio.gather(*runners, return_exceptions=True)
            self._waiting.clear()  # not acknowledged: another worker reclaims them
            # Drain: let running turns finish; what remains after the grace period stays pending
            # in the stream (not acknowledged) and is reclaimed by another worker.
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=self.drain_s)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def stop(self) -> None:
        self._stopping.set()

    async def _ensure_group(self) -> None:
        try:
            await self.redis.xgroup_create(self.keys.stream, self.keys.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def _forever(self, step: Callable[[], Awaitable[None]], what: str) -> None:
        """Run `step()` in a loop; survive Redis going away (restart) with a capped back-off."""
        delay = RETRY_S
        while True:
            try:
                await step()
                delay = RETRY_S
            except (RedisError, OSError) as exc:
                log.warning("%s: redis unavailable (%s); retrying in %.1fs", what, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 8.0)
            honour_cancellation()  # a cancel redis-py swallowed still ends the loop

    # --- reading and reclaiming ------------------------------------------------------------

    def _waiting_count(self) -> int:
        return sum(len(q) for q in self._waiting.values())

    async def _read_loop(self) -> None:
        await self._forever(self._read_once, "read")

    async def _read_once(self) -> None:
        await self._room.wait()
        await self._slots.acquire()  # read only what we can run now
        try:
            batch: list[Any]
            try:
                # RESP2 (redis-py's default protocol) answers a list of [stream, entries].
                batch = cast(
                    "list[Any]",
                    await self.redis.xreadgroup(
                        self.keys.group,
                        self.consumer,
                        {self.keys.stream: ">"},
                        count=1,
                        block=BLOCK_MS,
                    ),
                )
            except ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                await self._ensure_group()  # first start, or Redis lost its data
                batch = []
        except BaseException:
            self._slots.release()
            raise
        entries = [e for _, items in batch or [] for e in items]
        if not entries:
            self._slots.release()
            return
        await self._admit(*entries[0])

    async def _reclaim_loop(self) -> None:
        async def step() -> None:
            await asyncio.sleep(self.reclaim_every_s)
            await self._reclaim_once()

        await self._forever(step, "reclaim")

    async def _reclaim_once(self) -> None:
        while not self._slots.locked() and self._room.is_set():
            await self._slots.acquire()
            try:
                result: list[Any] = await self.redis.xautoclaim(
                    self.keys.stream,
                    self.keys.group,
                    self.consumer,
                    min_idle_time=self.lease_ms,
                    count=1,
                )
            except BaseException:
                self._slots.release()
                raise
            claimed = [e for e in result[1] if e[1]]  # deleted entries come back without fields
            if not claimed:
                self._slots.release()
                return
            log.info("reclaimed turn %s from a worker that stopped", _text(claimed[0][0]))
            DISPATCH_RECLAIMS.inc()  # ops
            await self._admit(*claimed[0])

    async def _admit(self, entry_id: bytes | str, fields: dict[bytes | str, bytes | str]) -> None:
        """Holding a slot: run the entry, or let it wait if its user has no slot left."""
        entry = _entry(entry_id, fields)
        if entry is None:
            self._slots.release()
            log.error("malformed stream entry %s dropped", _text(entry_id))
            await self.redis.xack(self.keys.stream, self.keys.group, entry_id)
            return
        if self._per_user.get(entry.user, 0) >= self.user_slots:
            self._waiting.setdefault(entry.user, deque()).append(entry)
            if self._waiting_count() >= self.max_waiting:
                self._room.clear()
            self._slots.release()  # for another user's turn
            return
        self._start(entry)

    def _next_waiting(self) -> Entry | None:
        """The next waiting entry of a user with a free slot, users taken round-robin."""
        for user in list(self._waiting):
            if self._per_user.get(user, 0) < self.user_slots:
                queue = self._waiting.pop(user)
                entry = queue.popleft()
                if queue:
                    self._waiting[user] = queue  # to the back of the round
                self._room.set()
                return entry
        return None

    def _start(self, entry: Entry) -> None:
        """Run `entry` in the slot the caller holds."""
        self._per_user[entry.user] = self._per_user.get(entry.user, 0) + 1
        task = asyncio.create_task(self._handle(entry))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _finished(self, entry: Entry) -> None:
        """Hand the slot to a waiting entry, or free it."""
        left = self._per_user.get(entry.user, 0) - 1
        if left > 0:
            self._per_user[entry.user] = left
        else:
            self._per_user.pop(entry.user, None)
        waiting = None if self._stopping.is_set() else self._next_waiting()
        if waiting is None:
            self._slots.release()
        else:
            self._start(waiting)

    async def _keep_waiting(self) -> None:
        """Entries waiting for a user's slot are ours: keep their idle time and claims fresh."""

        async def step() -> None:
            await asyncio.sleep(self.heartbeat_s)
            waiting = [e for queue in self._waiting.values() for e in queue]
            if waiting:
                await self.redis.xclaim(
                    self.keys.stream,
                    self.keys.group,
                    self.consumer,
                    0,
                    [e.entry_id for e in waiting],
                    justid=True,
                )
                for entry in waiting:
                    await self.redis.expire(self.keys.lock(entry.conversation_id), self.lock_ttl_s)

        await self._forever(step, "waiting turns")

    # --- one turn ------------------------------------------------------------------------

    async def _handle(self, entry: Entry) -> None:
        try:
            observe_stream_lag(entry.entry_id)  # ops
            lease = self.keys.lease(entry.message_id)
            if not await self.redis.set(lease, self.consumer, nx=True, px=self.lease_ms):
                return  # someone still runs it; their heartbeat keeps the entry theirs
            heartbeat = asyncio.create_task(self._heartbeat(entry))

            async def release() -> None:  # before the end is announced: the next send may follow
                await self._release(
                    keys=[self.keys.lock(entry.conversation_id)], args=[entry.message_id]
                )

            with tracer.start_as_current_span(  # ops: joins the sender's trace
                "dispatch.receive", context=extract(entry.trace), kind=SpanKind.CONSUMER
            ):
                turn = asyncio.create_task(  # the task copies the span's context
                    self.runner.run(entry.conversation_id, int(entry.message_id), release=release)
                )
            self._running[entry.conversation_id] = (turn, int(entry.message_id))
            try:
                await turn
            finally:
                self._running.pop(entry.conversation_id, None)
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeat
            await self.redis.xack(self.keys.stream, self.keys.group, entry.entry_id)
            await self._release(keys=[lease], args=[self.consumer])
        except (RedisError, OSError):
            log.exception("turn bookkeeping failed; the entry will be reclaimed")
        finally:
            self._finished(entry)

    async def _heartbeat(self, entry: Entry) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                await self._extend(
                    keys=[self.keys.lease(entry.message_id)], args=[self.consumer, self.lease_ms]
                )
                # XCLAIM to ourselves with min-idle 0 resets the entry's idle time.
                await self.redis.xclaim(
                    self.keys.stream,
                    self.keys.group,
                    self.consumer,
                    0,
                    [entry.entry_id],
                    justid=True,
                )
                await self.redis.expire(self.keys.lock(entry.conversation_id), self.lock_ttl_s)
            except (RedisError, OSError) as exc:
                log.warning("heartbeat of turn %s failed: %s", entry.message_id, exc)
            # A cancel redis-py swallowed still ends the heartbeat: its turn's task waits for
            # it, once, and a heartbeat going on would keep the lease of a turn that is over.
            honour_cancellation()

    # --- cancellation ------------------------------------------------------------------

    async def _cancel_loop(self) -> None:
        await self._forever(self._listen_for_cancels, "cancel listener")

    async def _listen_for_cancels(self) -> None:
        pubsub = self.redis.pubsub()
        try:
            await pubsub.subscribe(self.keys.cancel)
            async for message in pubsub.listen():
                if message["type"] == "message":
                    self._cancel(_text(message["data"]))
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _cancel(self, conversation_id: str) -> None:
        running = self._running.get(conversation_id)
        if running is not None:
            turn, message_id = running
            self.runner.request_cancel(message_id)  # seen at the turn's next event
            turn.cancel()  # the runner stores the cancelled answer and ends
            return
        for queue in self._waiting.values():  # waiting here: it stops at its first event
            for entry in queue:
                if entry.conversation_id == conversation_id:
                    self.runner.request_cancel(int(entry.message_id))


async def serve(settings: Settings, *, model: BaseChatModel | None = None) -> None:
    """The worker process: database, Redis, the turn machinery, turns until SIGTERM."""
    if not settings.redis_url:
        raise SystemExit(
            "skillhive worker needs SKILLHIVE_REDIS_URL (embedded mode runs turns in the gateway)"
        )
    configure_tracing(settings, "skillhive-worker")  # ops
    engine = create_engine(
        settings.effective_database_url,
        pool_size=settings.database_pool_size,
        busy_timeout=settings.database_busy_timeout,
    )
    sessionmaker = create_sessionmaker(engine)
    redis = create_redis(settings.redis_url)
    sandbox = create_sandbox(settings)
    transport: RedisTransport
    transport, runner = build_worker(
        settings,
        sessionmaker,
        load_cipher(settings),
        redis,
        model=model,
        sandbox=sandbox,
        quotas=Quotas(settings, counters_for(redis, settings.redis_prefix)),  # ops
    )
    worker = TurnWorker(
        redis,
        runner,
        concurrency=settings.worker_concurrency,
        user_slots=settings.worker_user_slots,
        keys=transport.keys,
        lease_s=settings.turn_lease_seconds,
        drain_s=settings.worker_drain_s,
        lock_ttl_s=settings.turn_lock_ttl_s,
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, worker.stop)
    beats: asyncio.Task[None] | None = None
    stop_metrics = start_worker_metrics(settings, transport.registry, engine)  # ops
    try:
        await transport.registry.start()
        beats = asyncio.create_task(keep_beating(redis, heartbeat_path(settings)))
        await log_sandbox(sandbox)
        freeze_startup_objects()  # ops: full garbage collections skip what the worker started with
        log.info("worker %s ready (concurrency %d)", worker.consumer, settings.worker_concurrency)
        await worker.run()
    finally:
        if beats is not None:
            beats.cancel()
            await asyncio.gather(beats, return_exceptions=True)
        if stop_metrics is not None:
            stop_metrics()
        await transport.registry.aclose()
        sandbox.close()
        await redis.aclose()
        await engine.dispose()
