"""The one way processes open Redis: connections that survive a Redis restart.

A pooled connection idle across a restart is dead; `health_check_interval` pings before reusing
an idle one, and connection errors are retried with a short backoff, so the first command after
a restart reconnects instead of failing.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, TimeoutError

HEALTH_CHECK_S = 5
RETRIES = 5


def create_redis(url: str) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        url,
        health_check_interval=HEALTH_CHECK_S,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), RETRIES),
        retry_on_error=[ConnectionError, TimeoutError, ConnectionResetError],
        socket_connect_timeout=5,
    )
