"""The one way processes open Redis: connections that survive a Redis restart.

A pooled connection idle across a restart is dead; `health_check_interval` pings before reusing
an idle one, and connection errors are retried with a short backoff, so the first command after
a restart reconnects instead of failing. The pool blocks (briefly) rather than failing when a
burst needs more connections than it holds.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, TimeoutError

HEALTH_CHECK_S = 5
RETRIES = 5


MAX_CONNECTIONS = 256
POOL_WAIT_S = 10  # a burst waits for a free connection instead of failing at the pool's cap


def create_redis(url: str) -> aioredis.Redis:
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=MAX_CONNECTIONS,
        timeout=POOL_WAIT_S,
        health_check_interval=HEALTH_CHECK_S,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), RETRIES),
        retry_on_error=[ConnectionError, TimeoutError, ConnectionResetError],
        socket_connect_timeout=5,
    )
    return aioredis.Redis.from_pool(pool)  # the client owns the pool: aclose() closes it
