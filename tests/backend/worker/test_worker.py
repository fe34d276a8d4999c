"""`TurnWorker`: leases, reclaiming a dead worker's turn, cancellation, fair slots per user."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.wait import eventually
from tests.support.worker import Bench


async def test_a_turn_runs_under_a_lease_then_is_acknowledged_and_frees_its_conversation(
    bench: Bench,
) -> None:
    await bench.submit(1)
    worker = bench.start()

    async def running() -> bool:
        return bench.runner.started == [1]

    await eventually(running)
    assert (await bench.redis.get(bench.keys.lease(1))) == worker.consumer.encode()
    assert await bench.pending() == 1
    bench.runner.finish(1)

    async def done() -> bool:
        return await bench.pending() == 0

    await eventually(done)
    assert not await bench.redis.exists(bench.keys.lease(1), bench.keys.lock("c1"))


async def test_a_dead_workers_turn_is_reclaimed_and_run_once(bench: Bench) -> None:
    await bench.submit(2)
    # A worker read it, then died: pending to it, no lease, no heartbeat.
    await bench.redis.xreadgroup(bench.keys.group, "dead", {bench.keys.stream: ">"}, count=1)
    bench.start(lease_s=0.3)

    async def reclaimed() -> bool:
        return bench.runner.started == [2]

    await eventually(reclaimed)
    bench.runner.finish(2)

    async def acknowledged() -> bool:
        return await bench.pending() == 0

    await eventually(acknowledged)
    assert bench.runner.started == [2]


async def test_a_turn_whose_lease_is_held_elsewhere_is_not_run_again(bench: Bench) -> None:
    await bench.submit(3)
    await bench.redis.xreadgroup(bench.keys.group, "alive", {bench.keys.stream: ">"}, count=1)
    await bench.redis.set(bench.keys.lease(3), "alive")  # its worker still heartbeats
    bench.start(lease_s=0.3)

    async def delivered_again() -> bool:
        entries: list[dict[str, Any]] = await bench.redis.xpending_range(
            bench.keys.stream, bench.keys.group, min="-", max="+", count=1
        )
        return bool(entries) and entries[0]["times_delivered"] >= 2

    await eventually(delivered_again)  # the reclaimer saw it...
    assert bench.runner.started == []  # ...and left it to the lease holder


async def test_a_cancel_stops_the_running_turn(bench: Bench) -> None:
    await bench.submit(4)
    bench.start()

    async def running() -> bool:
        return bench.runner.started == [4]

    await eventually(running)

    async def cancelled() -> bool:
        await bench.redis.publish(bench.keys.cancel, "c4")  # until the listener is subscribed
        return bench.runner.cancelled == [4]

    await eventually(cancelled, interval=0.1)
    assert 4 in bench.runner.cancel_requests  # also flagged, in case the cancel is swallowed

    async def acknowledged() -> bool:
        return await bench.pending() == 0

    await eventually(acknowledged)


async def test_a_heartbeat_whose_cancel_redis_py_swallows_still_ends(bench: Bench) -> None:
    """On Python 3.11 redis-py can swallow a cancellation that lands in a command (see
    docs/architecture.md). A turn's end cancels its heartbeat once and waits for it: a heartbeat
    going on after a swallowed cancel held the turn's bookkeeping (and a worker's stop) forever."""
    await bench.submit(5)
    worker = bench.start(lease_s=0.5)

    async def running() -> bool:
        return bench.runner.started == [5]

    await eventually(running)
    extend = worker._extend
    inside = asyncio.Event()
    swallowed: list[bool] = []

    async def swallowing(**kwargs: Any) -> Any:  # as redis-py's wait_for does on 3.11
        if swallowed:
            return await extend(**kwargs)
        inside.set()
        try:
            await asyncio.Event().wait()  # a command the cancel lands in
        except asyncio.CancelledError:
            swallowed.append(True)  # and loses: the heartbeat goes on
        return None

    worker._extend = swallowing  # type: ignore[assignment]
    await eventually(lambda: _is_set(inside))
    bench.runner.finish(5)  # the turn ends: its heartbeat is cancelled inside the command

    async def acknowledged() -> bool:
        return await bench.pending() == 0

    await eventually(acknowledged)
    assert swallowed == [True]
    assert not await bench.redis.exists(bench.keys.lease(5))


async def _is_set(event: asyncio.Event) -> bool:
    return event.is_set()


async def test_one_users_hanging_turns_do_not_hold_every_slot(bench: Bench) -> None:
    """8 slots, user A's 8 turns hang: user B's turn still starts at once, while A's hang."""
    for message_id in range(10, 18):
        await bench.submit(message_id, user=1)
    bench.start(concurrency=8, user_slots=4)

    async def a_running() -> bool:
        return len(bench.runner.started) == 4

    await eventually(a_running)
    await bench.submit(99, user=2)

    async def b_running() -> bool:
        return 99 in bench.runner.started

    await eventually(b_running, deadline_s=2.0)
    assert not bench.runner.cancelled and not any(g.is_set() for g in bench.runner.gates.values())
    assert sorted(bench.runner.started) == [10, 11, 12, 13, 99]  # A holds its share only

    bench.runner.finish(10)  # A's slot frees: A's next waiting turn takes it

    async def a_next() -> bool:
        return len(bench.runner.started) == 6

    await eventually(a_next)
    assert bench.runner.started[-1] == 14


async def test_a_waiting_turn_is_kept_alive_and_cancelled_when_asked(bench: Bench) -> None:
    for message_id in (20, 21):
        await bench.submit(message_id, user=1)
    bench.start(concurrency=2, user_slots=1, lease_s=0.3)

    async def one_running() -> bool:
        return bench.runner.started == [20]

    await eventually(one_running)

    async def cancel_requested() -> bool:
        await bench.redis.publish(bench.keys.cancel, "c21")
        return 21 in bench.runner.cancel_requests

    await eventually(cancel_requested, interval=0.1)

    idle: list[int] = []

    async def kept_alive() -> bool:  # its idle time was reset by the worker's heartbeat
        entries = await bench.redis.xpending_range(
            bench.keys.stream, bench.keys.group, min="-", max="+", count=2
        )
        idle.append(int(entries[1]["time_since_delivered"]))
        return len(idle) > 1 and idle[-1] < idle[-2]

    await eventually(kept_alive, interval=0.05)
    entries = await bench.redis.xpending_range(
        bench.keys.stream, bench.keys.group, min="-", max="+", count=2
    )
    assert {e["times_delivered"] for e in entries} == {1}  # nobody reclaimed it
    assert bench.runner.started == [20]
    bench.runner.finish(20)  # the slot frees: the waiting turn runs (and stops at once)

    async def ran() -> bool:
        return bench.runner.started == [20, 21]

    await eventually(ran)
