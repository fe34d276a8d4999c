"""Shared benchmark helpers: side-by-side timing and real token counts."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache

import bpe_openai

Job = Callable[[], Awaitable[object]]


@dataclass(frozen=True)
class Comparison:
    median_ratio: float  # median of per-pair ratios candidate/baseline
    candidate_ms: float  # medians of the single runs
    baseline_ms: float
    pairs: int
    overhead_p50_ms: float = 0.0  # per-pair candidate minus baseline
    overhead_p99_ms: float = 0.0


async def _timed(job: Job) -> float:
    started = time.perf_counter()
    await job()
    return time.perf_counter() - started


async def compare(candidate: Job, baseline: Job, *, pairs: int, warmup: int = 20) -> Comparison:
    """Time two jobs in alternating pairs (order flipped every pair) on a noisy shared machine.

    Each pair runs back to back, so drift hits both sides alike; the median of the per-pair
    ratios is robust against the outliers that remain.
    """
    for _ in range(warmup):
        await candidate()
        await baseline()
    ratios, mine, theirs = [], [], []
    for i in range(pairs):
        if i % 2:
            b, c = await _timed(baseline), await _timed(candidate)
        else:
            c, b = await _timed(candidate), await _timed(baseline)
        ratios.append(c / b)
        mine.append(c)
        theirs.append(b)
    overheads = [c - b for c, b in zip(mine, theirs, strict=True)]
    return Comparison(
        median_ratio=statistics.median(ratios),
        candidate_ms=statistics.median(mine) * 1000,
        baseline_ms=statistics.median(theirs) * 1000,
        pairs=pairs,
        overhead_p50_ms=_percentile(overheads, 50) * 1000,
        overhead_p99_ms=_percentile(overheads, 99) * 1000,
    )


def _percentile(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


@lru_cache(maxsize=1)
def _cl100k() -> bpe_openai.Encoding:
    return bpe_openai.get_encoding("cl100k_base")


@lru_cache(maxsize=4096)
def count_tokens(text: str) -> int:
    """cl100k tokens of `text` (memoized: prompts repeat a lot across calls)."""
    return len(_cl100k().encode_ordinary(text))
