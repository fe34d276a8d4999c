"""`fetch_source` tells what it downloaded, whether it succeeds or fails (a shared budget
charges both), against a file server on loopback."""

from __future__ import annotations

import socket
import threading

import pytest

from backend.config import Settings
from backend.skills.importing.errors import FetchError
from backend.skills.importing.fetch import fetch_source
from backend.skills.importing.limits import FetchLimits
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.marketplace import build_zip, skill_md
from tests.support.sources import SourceServer


async def test_the_bytes_downloaded_are_told_for_a_fetch_that_fails_and_one_that_succeeds() -> None:
    policy = Settings(egress_allow=LOOPBACK_ALLOW).egress
    archive = build_zip({"SKILL.md": skill_md("tiny", "A tiny skill.", "BODY")}, root="tiny")
    told: list[int] = []
    with SourceServer() as server:
        server.files["/junk.zip"] = b"j" * 5000
        server.files["/tiny.zip"] = archive

        with pytest.raises(FetchError) as refused:
            await fetch_source(
                server.url("/junk.zip"), None, None, policy, FetchLimits(), received=told.append
            )
        fetched = await fetch_source(
            server.url("/tiny.zip"), None, None, policy, FetchLimits(), received=told.append
        )

    assert refused.value.code == "not_an_archive"
    assert "SKILL.md" in fetched.files
    # the bodies and their answers' headers: what was read off the connection
    assert len(told) == 2
    assert 5000 < told[0] < 5000 + 1024 and len(archive) < told[1] < len(archive) + 1024


class ChunkExtensions:
    """A loopback server answering every request with a chunked body whose 1-byte chunks each
    carry an 8 KB chunk extension (framing the body's count did not see); counts bytes sent."""

    def __init__(self) -> None:
        self.sent = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection:
            connection.recv(65536)
            head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            chunk = b"1;" + b"x" * 8192 + b"\r\nA\r\n"
            try:
                connection.sendall(head)
                self.sent += len(head)
                for _ in range(2000):  # 16 MB of framing around 2,000 body bytes
                    connection.sendall(chunk)
                    self.sent += len(chunk)
                connection.sendall(b"0\r\n\r\n")
            except OSError:  # the client stopped reading: what it was meant to do
                pass

    def close(self) -> None:
        self._listener.close()
        self._thread.join(10)


async def test_chunk_framing_counts_against_the_download_limit() -> None:
    policy = Settings(egress_allow=LOOPBACK_ALLOW).egress
    server = ChunkExtensions()
    told: list[int] = []
    try:
        with pytest.raises(FetchError) as refused:
            await fetch_source(
                f"http://127.0.0.1:{server.port}/a.zip",
                None,
                None,
                policy,
                FetchLimits(download_bytes=10_000),
                received=told.append,
            )
    finally:
        server.close()

    assert refused.value.code == "download_too_large"
    assert told and 10_000 < told[0] < 10_000 + 65_536
    assert server.sent < 12 * 1024 * 1024  # refused as it read, not after the 16 MB
