"""The token bucket behind the Socket.IO event limit: its arithmetic and the sweep that keeps
its memory to the keys active lately, without ever handing a key more events."""

from __future__ import annotations

from backend.ws.server import _SWEEP_FLOOR, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_the_rate() -> None:
    clock = Clock()
    rates = RateLimiter(2.0, 3, clock=clock)
    assert [rates.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert rates.take("a") == 0.5  # one event every half second from here
    clock.now = 0.5
    assert rates.take("a") == 0.0
    assert rates.take("a") > 0
    assert rates.take("b") == 0.0  # another key, its own bucket


def test_full_buckets_are_swept_and_busy_ones_kept() -> None:
    clock = Clock()
    rates = RateLimiter(1.0, 2, clock=clock)
    rates.take("busy")
    rates.take("busy")  # empty: needs 2 s to refill
    for key in range(_SWEEP_FLOOR - 1):
        rates.take(key)  # each needs 1 s to refill
    assert len(rates) == _SWEEP_FLOOR
    clock.now = 1.0  # every key but "busy" is full again
    rates.take("new")  # past the floor: sweeps before adding
    assert len(rates) == 2
    assert rates.take("busy") == 0.0  # refilled by one token in that second...
    assert rates.take("busy") > 0  # ...not two: the sweep kept its bucket


def test_a_swept_key_gets_what_a_kept_one_would() -> None:
    clock = Clock()
    swept, kept = RateLimiter(1.0, 2, clock=clock), RateLimiter(1.0, 2, clock=clock)
    for rates in (swept, kept):
        rates.take("k")
    for key in range(_SWEEP_FLOOR):
        swept.take(key)
    clock.now = 5.0
    swept.take("other")  # sweeps "k", full again by now
    assert [swept.take("k") for _ in range(3)] == [kept.take("k") for _ in range(3)]
