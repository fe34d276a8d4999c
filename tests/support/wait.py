"""Wait on a condition with a deadline (no fixed sleeps in tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    check: Callable[[], Awaitable[T]], *, deadline_s: float = 10.0, interval: float = 0.02
) -> T:
    """Poll `check` until it returns something truthy; fail with TimeoutError at the deadline."""
    async with asyncio.timeout(deadline_s):
        while True:
            result = await check()
            if result:
                return result
            await asyncio.sleep(interval)
