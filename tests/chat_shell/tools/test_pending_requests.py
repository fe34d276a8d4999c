"""PendingRequestRegistry (issue 6): both implementations, real Redis, real second processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import secrets
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from chat_shell.ports import InMemoryFrontendChannel
from chat_shell.tools.pending_requests import (
    REQUEST_EVENT,
    FrontendError,
    InMemoryPendingRequestRegistry,
    Outcome,
    RedisPendingRequestRegistry,
    RegistryMetrics,
    RequestTimeout,
)
from tests.support.wait import eventually

ROOT = Path(__file__).resolve().parents[3]
ALICE, MALLORY = 1, 2
PROMPTLY = 10.0  # deadline for what must happen soon; well below every wait's own timeout

only_redis = pytest.mark.parametrize("kind", ["redis"])


@dataclass
class Harness:
    registry: InMemoryPendingRequestRegistry | RedisPendingRequestRegistry
    channel: InMemoryFrontendChannel
    redis: aioredis.Redis | None = None  # the Redis registry's client
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    async def ask(
        self, *, user_id: int = ALICE, timeout_s: float = 60.0, payload: Any = None
    ) -> tuple[asyncio.Task[Any], str]:
        """Start a request as a tool would; return its task and the id the browser received."""
        args = ("conv-1", "mermaid-diagram", "render", payload or {"code": "graph TD; A-->B"})
        task = asyncio.create_task(self.registry.request(user_id, *args, timeout_s))
        self.tasks.append(task)
        message = await asyncio.wait_for(
            self.channel.wait_for(REQUEST_EVENT, count=len(self.tasks)), PROMPTLY
        )
        return task, str(message.data["request_id"])

    async def resolve(self, request_id: str, result: Any = "ok", user_id: int = ALICE) -> Outcome:
        return await self.registry.resolve(user_id, request_id, True, result, None)

    async def stored(self) -> int:
        """Requests and tombstones the registry still holds."""
        if isinstance(self.registry, InMemoryPendingRequestRegistry):
            return self.registry.stored()
        assert self.redis is not None
        return len([k async for k in self.redis.scan_iter(match=f"{self.registry.prefix}:*")])

    async def settled(self, request_id: str) -> bool:
        """Whether the request became a tombstone (Redis settles in the background)."""
        if isinstance(self.registry, InMemoryPendingRequestRegistry):
            return True
        assert self.redis is not None
        state = await self.redis.hget(self.registry.key(request_id), "state")
        return state in (b"done", b"expired")

    async def close(self) -> None:
        """Idempotent: tests whose Redis user goes away close early."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.registry.aclose()
        if self.redis is not None:
            await self.redis.aclose()


MakeHarness = Callable[..., Awaitable[Harness]]


@pytest.fixture(params=["memory", "redis"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_harness(kind: str, redis_url: str) -> AsyncIterator[MakeHarness]:
    made: list[Harness] = []

    async def make(*, tombstone_ttl: float = 60.0, **redis_kwargs: Any) -> Harness:
        channel = InMemoryFrontendChannel()
        if kind == "memory":
            harness = Harness(
                InMemoryPendingRequestRegistry(channel, tombstone_ttl=tombstone_ttl), channel
            )
        else:
            client = aioredis.Redis.from_url(redis_url, **redis_kwargs)
            prefix = f"test:pending:{uuid.uuid4().hex[:12]}"
            registry = RedisPendingRequestRegistry(
                client, channel, prefix=prefix, tombstone_ttl=tombstone_ttl
            )
            harness = Harness(registry, channel, client)
        made.append(harness)
        await harness.registry.start()
        return harness

    yield make
    for harness in made:
        await harness.close()


@pytest.fixture
async def harness(make_harness: MakeHarness) -> Harness:
    return await make_harness()


# --- both implementations -------------------------------------------------------------------


async def test_the_browsers_answer_resolves_the_waiting_request(harness: Harness) -> None:
    task, request_id = await harness.ask(payload={"code": "graph TD; A-->B"})

    [message] = harness.channel.messages
    assert message.conversation_id == "conv-1"
    assert message.data == {
        "request_id": request_id,
        "skill_name": "mermaid-diagram",
        "action": "render",
        "data": {"code": "graph TD; A-->B"},
    }
    assert await harness.resolve(request_id, {"svg": "<svg/>"}) is Outcome.RESOLVED
    assert await asyncio.wait_for(task, PROMPTLY) == {"svg": "<svg/>"}


async def test_a_failure_reported_by_the_browser_is_a_frontend_error(harness: Harness) -> None:
    task, request_id = await harness.ask()

    outcome = await harness.registry.resolve(
        ALICE, request_id, False, None, "Parse error on line 1"
    )

    assert outcome is Outcome.RESOLVED
    with pytest.raises(FrontendError) as caught:
        await asyncio.wait_for(task, PROMPTLY)
    assert caught.value.code == "frontend_error"
    assert "mermaid-diagram.render" in caught.value.message
    assert "Parse error on line 1" in caught.value.message
    assert caught.value.details["error"] == "Parse error on line 1"


async def test_another_users_answer_is_not_found_like_an_unknown_id(harness: Harness) -> None:
    task, request_id = await harness.ask()

    forged = await harness.resolve(request_id, "forged", user_id=MALLORY)
    unknown = await harness.resolve(secrets.token_urlsafe(18))

    assert forged is unknown is Outcome.NOT_FOUND
    assert not task.done()
    assert await harness.resolve(request_id, "real") is Outcome.RESOLVED
    assert await asyncio.wait_for(task, PROMPTLY) == "real"
    # The tombstone does not reveal the request to another user either.
    assert await harness.resolve(request_id, "forged", user_id=MALLORY) is Outcome.NOT_FOUND


async def test_ids_that_cannot_be_ours_are_not_found(harness: Harness) -> None:
    for request_id in ["", "x" * 10_000, None, 42]:
        assert await harness.resolve(request_id) is Outcome.NOT_FOUND  # type: ignore[arg-type]


async def test_request_ids_are_unique_and_unguessably_long(harness: Harness) -> None:
    asked = [await harness.ask() for _ in range(20)]
    ids = {request_id for _, request_id in asked}

    assert len(ids) == 20
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{24,}", request_id) for request_id in ids)
    for _, request_id in asked:
        assert await harness.resolve(request_id) is Outcome.RESOLVED


async def test_a_duplicate_answer_is_already_resolved(harness: Harness) -> None:
    task, request_id = await harness.ask()

    assert await harness.resolve(request_id, "first") is Outcome.RESOLVED
    assert await asyncio.wait_for(task, PROMPTLY) == "first"
    assert await harness.resolve(request_id, "second") is Outcome.ALREADY_RESOLVED


async def test_concurrent_answers_resolve_the_request_exactly_once(harness: Harness) -> None:
    task, request_id = await harness.ask()

    outcomes = await asyncio.gather(*(harness.resolve(request_id, i) for i in range(20)))

    winners = [i for i, outcome in enumerate(outcomes) if outcome is Outcome.RESOLVED]
    assert len(winners) == 1
    assert set(outcomes) == {Outcome.RESOLVED, Outcome.ALREADY_RESOLVED}
    assert await asyncio.wait_for(task, PROMPTLY) == winners[0]


async def test_a_timeout_is_a_clear_tool_error_and_a_late_answer_is_expired(
    harness: Harness,
) -> None:
    task, request_id = await harness.ask(timeout_s=0.2)

    with pytest.raises(RequestTimeout) as caught:
        await asyncio.wait_for(task, PROMPTLY)

    assert caught.value.code == "request_timeout"
    assert caught.value.message == (
        "the browser did not answer mermaid-diagram.render within 0.2 s"
    )
    assert caught.value.details["request_id"] == request_id
    assert await harness.resolve(request_id, "late") is Outcome.EXPIRED
    assert await harness.resolve(request_id, "late", user_id=MALLORY) is Outcome.NOT_FOUND


async def test_a_cancelled_wait_expires_the_request(harness: Harness) -> None:
    task, request_id = await harness.ask()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert harness.registry.metrics().pending == 0
    await eventually(lambda: harness.settled(request_id), deadline_s=PROMPTLY)
    assert await harness.resolve(request_id) is Outcome.EXPIRED


async def test_tombstones_expire_and_nothing_is_left_behind(make_harness: MakeHarness) -> None:
    harness = await make_harness(tombstone_ttl=1.0)
    answered, answered_id = await harness.ask()
    timed_out, timed_out_id = await harness.ask(timeout_s=0.1)
    assert await harness.resolve(answered_id) is Outcome.RESOLVED
    await asyncio.wait_for(answered, PROMPTLY)
    with pytest.raises(RequestTimeout):
        await asyncio.wait_for(timed_out, PROMPTLY)
    assert await harness.resolve(answered_id) is Outcome.ALREADY_RESOLVED
    assert await harness.resolve(timed_out_id) is Outcome.EXPIRED

    async def nothing_stored() -> bool:
        return await harness.stored() == 0

    await eventually(nothing_stored, deadline_s=PROMPTLY)
    assert await harness.resolve(answered_id) is Outcome.NOT_FOUND
    assert await harness.resolve(timed_out_id) is Outcome.NOT_FOUND


async def test_metrics_count_pending_resolved_expired_and_rejected(harness: Harness) -> None:
    assert harness.registry.metrics() == RegistryMetrics(0, 0, 0, 0)
    answered, answered_id = await harness.ask()
    timed_out, timed_out_id = await harness.ask(timeout_s=0.2)
    assert harness.registry.metrics().pending == 2

    await harness.resolve(answered_id, user_id=MALLORY)  # rejected: not_found
    await harness.resolve(answered_id)  # resolved
    await harness.resolve(answered_id)  # rejected: already_resolved
    await asyncio.wait_for(answered, PROMPTLY)
    with pytest.raises(RequestTimeout):
        await asyncio.wait_for(timed_out, PROMPTLY)
    await harness.resolve(timed_out_id)  # rejected: expired

    assert harness.registry.metrics() == RegistryMetrics(
        pending=0, resolved=1, expired=1, rejected=3
    )


async def test_a_non_positive_timeout_is_refused(harness: Harness) -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        await harness.registry.request(ALICE, "conv-1", "s", "a", {}, 0)
    assert harness.channel.messages == []


# --- Redis: processes, keys, reconnects -----------------------------------------------------


class PublishingChannel(InMemoryFrontendChannel):
    """Emits as the Redis transport does: a redis-py PUBLISH in the requesting task."""

    def __init__(self, redis: aioredis.Redis) -> None:
        super().__init__()
        self.redis = redis

    async def emit(self, conversation_id: str, event: str, data: Mapping[str, Any]) -> None:
        await self.redis.publish(f"test:frontend:{conversation_id}", json.dumps(dict(data)))
        await super().emit(conversation_id, event, data)


async def test_a_cancel_landing_in_a_redis_call_still_ends_the_request(redis_url: str) -> None:
    """On Python 3.11 redis-py loses many cancellations that land while a command runs; the
    task still counts them, and the registry honours them after each step. Without that, about
    one in ten of these requests went on waiting for the browser on 3.11 (the cancels of the
    tests above land in the wait itself, where nothing is lost)."""
    client = aioredis.Redis.from_url(redis_url)
    prefix = f"test:pending:{uuid.uuid4().hex[:12]}"
    registry = RedisPendingRequestRegistry(client, PublishingChannel(client), prefix=prefix)
    await registry.start()
    rng = random.Random(7)
    try:
        for _ in range(100):
            task = asyncio.create_task(registry.request(ALICE, "conv-1", "s", "a", {}, 60.0))
            await asyncio.sleep(rng.uniform(0, 0.002))  # in its Redis calls, or waiting
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=PROMPTLY)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=PROMPTLY)
            assert task in done, "a cancelled request went on waiting for the browser"
            assert task.cancelled()
        assert registry.metrics().pending == 0
    finally:
        await registry.aclose()
        await client.aclose()


@dataclass
class Peer:
    """Another process holding its own registry, answering like a second gateway."""

    process: asyncio.subprocess.Process
    worker_id: str = ""

    async def _read(self) -> Any:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), PROMPTLY)
        assert line, "the peer process exited"
        return json.loads(line)

    def send(self, answers: list[list[Any]]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(answers).encode() + b"\n")

    async def outcomes(self) -> list[str]:
        reply: list[str] = (await self._read())["outcomes"]
        return reply

    async def resolve(self, *answers: list[Any]) -> list[str]:
        self.send(list(answers))
        return await self.outcomes()


@contextlib.asynccontextmanager
async def peer(url: str, prefix: str) -> AsyncIterator[Peer]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.pending_peer",
        url,
        prefix,
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    other = Peer(process)
    try:
        other.worker_id = (await other._read())["worker_id"]
        yield other
    finally:
        try:
            assert process.stdin is not None
            process.stdin.close()  # EOF ends the peer
            await asyncio.wait_for(process.communicate(), PROMPTLY)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


@only_redis
async def test_an_answer_arriving_at_another_process_resolves_the_wait(
    harness: Harness, redis_url: str
) -> None:
    assert isinstance(harness.registry, RedisPendingRequestRegistry)
    async with peer(redis_url, harness.registry.prefix) as other:
        assert other.worker_id != harness.registry.worker_id
        task, request_id = await harness.ask()

        assert await other.resolve([MALLORY, request_id, True, "forged", None]) == ["not_found"]
        assert not task.done()
        assert await other.resolve([ALICE, request_id, True, {"svg": "<svg/>"}, None]) == [
            "resolved"
        ]
        assert await asyncio.wait_for(task, PROMPTLY) == {"svg": "<svg/>"}
        assert await other.resolve([ALICE, request_id, True, "again", None]) == ["already_resolved"]


@only_redis
async def test_two_processes_answering_at_once_resolve_each_request_exactly_once(
    harness: Harness, redis_url: str
) -> None:
    assert isinstance(harness.registry, RedisPendingRequestRegistry)
    prefix = harness.registry.prefix
    async with peer(redis_url, prefix) as first, peer(redis_url, prefix) as second:
        asked = [await harness.ask() for _ in range(30)]

        first.send([[ALICE, request_id, True, "first", None] for _, request_id in asked])
        second.send([[ALICE, request_id, True, "second", None] for _, request_id in asked])
        pairs = zip(await first.outcomes(), await second.outcomes(), strict=True)

        for (task, _), (by_first, by_second) in zip(asked, pairs, strict=True):
            assert sorted([by_first, by_second]) == ["already_resolved", "resolved"]
            winner = "first" if by_first == "resolved" else "second"
            assert await asyncio.wait_for(task, PROMPTLY) == winner
    assert harness.registry.metrics().pending == 0


@only_redis
async def test_every_key_has_a_ttl_and_only_a_small_tombstone_outlives_a_request(
    make_harness: MakeHarness,
) -> None:
    harness = await make_harness(tombstone_ttl=5.0)
    assert isinstance(harness.registry, RedisPendingRequestRegistry) and harness.redis
    answered, answered_id = await harness.ask(timeout_s=30, payload={"big": "x" * 10_000})
    timed_out, timed_out_id = await harness.ask(timeout_s=0.1)
    # Pending: the TTL outlives the wait, so a dead waiter's request still goes away.
    assert 30_000 < await harness.redis.pttl(harness.registry.key(answered_id))

    await harness.resolve(answered_id, {"svg": "y" * 10_000})
    await asyncio.wait_for(answered, PROMPTLY)
    with pytest.raises(RequestTimeout):
        await asyncio.wait_for(timed_out, PROMPTLY)
    await eventually(lambda: harness.settled(answered_id), deadline_s=PROMPTLY)

    for request_id, state in [(answered_id, b"done"), (timed_out_id, b"expired")]:
        key = harness.registry.key(request_id)
        assert await harness.redis.hgetall(key) == {b"user": b"1", b"state": state}
        assert 0 < await harness.redis.pttl(key) <= 5_000
    keys = [k async for k in harness.redis.scan_iter(match=f"{harness.registry.prefix}:*")]
    assert len(keys) == 2


@contextlib.asynccontextmanager
async def acl_user(redis_url: str) -> AsyncIterator[tuple[aioredis.Redis, dict[str, str]]]:
    """A Redis user of its own, so a test can cut only its pub/sub; yields admin + creds."""
    admin = aioredis.Redis.from_url(redis_url)
    creds = {"username": f"pending-{uuid.uuid4().hex[:8]}", "password": secrets.token_hex(8)}
    await admin.acl_setuser(
        creds["username"],
        enabled=True,
        passwords=[f"+{creds['password']}"],
        keys=["*"],
        channels=["*"],
        commands=["+@all"],
    )
    try:
        yield admin, creds
    finally:
        await admin.acl_deluser(creds["username"])
        await admin.aclose()


async def cut_pubsub(admin: aioredis.Redis, username: str) -> None:
    """Kill the user's pub/sub connection; it cannot subscribe again until channels return."""
    await admin.acl_setuser(username, enabled=True, reset_channels=True)
    await admin.client_kill_filter(_type="pubsub", user=username)


def gateway(admin: aioredis.Redis, harness: Harness) -> RedisPendingRequestRegistry:
    """Another registry on another connection: where the browser's answer arrives."""
    assert isinstance(harness.registry, RedisPendingRequestRegistry)
    return RedisPendingRequestRegistry(
        admin, InMemoryFrontendChannel(), prefix=harness.registry.prefix
    )


@only_redis
async def test_an_answer_sent_while_the_listener_is_disconnected_is_not_lost(
    make_harness: MakeHarness, redis_url: str
) -> None:
    async with acl_user(redis_url) as (admin, creds):
        harness = await make_harness(**creds)
        assert isinstance(harness.registry, RedisPendingRequestRegistry)
        other = gateway(admin, harness)
        task, request_id = await harness.ask(timeout_s=60)

        await cut_pubsub(admin, creds["username"])
        assert await admin.pubsub_numsub(harness.registry.channel_name) == [
            (harness.registry.channel_name.encode(), 0)
        ]
        outcome = await other.resolve(ALICE, request_id, True, "answered during the outage")
        assert outcome is Outcome.RESOLVED
        assert not task.done()

        await admin.acl_setuser(creds["username"], enabled=True, channels=["*"])
        # Found by the recheck after resubscribing, long before the 60 s deadline.
        assert await asyncio.wait_for(task, PROMPTLY) == "answered during the outage"

        # And the listener is live again: the next answer arrives by message.
        task, request_id = await harness.ask(timeout_s=60)
        assert await other.resolve(ALICE, request_id, True, "after") is Outcome.RESOLVED
        assert await asyncio.wait_for(task, PROMPTLY) == "after"
        await harness.close()  # while its Redis user still exists


@only_redis
async def test_at_the_deadline_a_stored_answer_wins_over_expiry(
    make_harness: MakeHarness, redis_url: str
) -> None:
    async with acl_user(redis_url) as (admin, creds):
        harness = await make_harness(**creds)
        task, request_id = await harness.ask(timeout_s=0.5)
        await cut_pubsub(admin, creds["username"])

        outcome = await gateway(admin, harness).resolve(ALICE, request_id, True, "just in time")
        assert outcome is Outcome.RESOLVED

        assert await asyncio.wait_for(task, PROMPTLY) == "just in time"
        assert harness.registry.metrics().expired == 0
        await harness.close()  # while its Redis user still exists


@only_redis
async def test_requests_work_after_redis_forgot_the_scripts(harness: Harness) -> None:
    assert harness.redis is not None
    await harness.redis.script_flush()  # as after a Redis restart

    task, request_id = await harness.ask()
    await harness.redis.script_flush()

    assert await harness.resolve(request_id, "still works") is Outcome.RESOLVED
    assert await asyncio.wait_for(task, PROMPTLY) == "still works"
