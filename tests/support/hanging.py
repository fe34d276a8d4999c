"""A loopback endpoint that accepts connections and never answers (a hung model server)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hanging_endpoint() -> Iterator[str]:
    """Yields `http://127.0.0.1:<port>/v1`: the kernel completes every TCP handshake (the
    listen backlog), nothing ever reads the request or answers it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
