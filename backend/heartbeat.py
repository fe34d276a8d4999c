"""The worker's liveness file: `skillhive worker` touches it while it can work, and
`skillhive worker --check` (the container health check) says whether it is fresh.

A beat happens only when Redis answers, so a stale file means the process died, its event loop
is stuck, or it cannot reach Redis: in each case it runs no turns. Kept free of heavy imports:
the health check runs every few seconds.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from chat_shell import honour_cancellation

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from backend.config import Settings

FILE_NAME = "worker.heartbeat"
EVERY_S = 5.0
MAX_AGE_S = 30.0  # six missed beats: a busy event loop is not a dead worker


def heartbeat_path(settings: Settings) -> Path:
    return settings.data_dir / FILE_NAME


async def beat(redis: aioredis.Redis, path: Path) -> bool:
    """Touch `path` if Redis answers; False (file untouched) if it does not."""
    from redis.exceptions import RedisError  # here: `--check` should not pay for redis

    try:
        await redis.ping()
    except (RedisError, OSError):
        return False
    await asyncio.to_thread(path.touch)
    return True


async def keep_beating(redis: aioredis.Redis, path: Path, every_s: float = EVERY_S) -> None:
    """Beat every `every_s` seconds until cancelled; the file is removed on the way out."""
    await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
    try:
        while True:
            await beat(redis, path)
            honour_cancellation()  # a cancel redis-py swallowed in the ping still stops it
            await asyncio.sleep(every_s)
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)


def age_s(path: Path) -> float | None:
    """Seconds since the last beat, or None when there is no heartbeat file."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return None
