"""`fetch_source` tells what it downloaded, whether it succeeds or fails (a shared budget
charges both), against a file server on loopback."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from backend.config import Settings
from backend.skills.importing import http
from backend.skills.importing.errors import FetchError
from backend.skills.importing.fetch import fetch_source
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import FetchedTree
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.marketplace import build_zip, skill_md
from tests.support.sources import SourceServer
from tests.support.tls import tls_pair


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


class OneConnection:
    """A loopback server that serves one connection in a thread (`_serve`)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._listener.close()
        self._thread.join(10)


class ChunkExtensions(OneConnection):
    """Answers with a chunked body whose 1-byte chunks each carry an 8 KB chunk extension
    (framing the body's count did not see); counts bytes sent."""

    sent = 0

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


class TlsServer(OneConnection):
    """Answers one HTTPS request with `body`; `tickets` TLS 1.3 session tickets follow the
    handshake (a server may send them without end)."""

    def __init__(self, context: ssl.SSLContext, body: bytes, *, tickets: int = 2) -> None:
        context.num_tickets = tickets
        self._context, self._body = context, body
        super().__init__()

    def _serve(self) -> None:
        raw, _ = self._listener.accept()
        try:
            with self._context.wrap_socket(raw, server_side=True) as conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(self._body)}\r\n\r\n"
                conn.sendall(head.encode() + self._body)
        except OSError:  # the client gave up: what some tests want
            pass


async def fetch_over_tls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: bytes, *, tickets: int = 2
) -> tuple[FetchedTree, list[int]]:
    server_ctx, client_ctx, _ = tls_pair(tmp_path, "localhost")
    monkeypatch.setattr(http, "_ssl_context", lambda: client_ctx)  # trusts the test CA
    policy = Settings(egress_allow=LOOPBACK_ALLOW).egress
    server = TlsServer(server_ctx, body, tickets=tickets)
    told: list[int] = []
    try:
        fetched = await fetch_source(
            f"https://localhost:{server.port}/tiny.zip",
            None,
            None,
            policy,
            FetchLimits(download_bytes=100_000),
            received=told.append,
        )
    finally:
        server.close()
    return fetched, told


async def test_an_https_archive_is_fetched_and_its_tls_bytes_are_counted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    archive = build_zip({"SKILL.md": skill_md("tiny", "A tiny skill.", "BODY")}, root="tiny")

    fetched, told = await fetch_over_tls(monkeypatch, tmp_path, archive)

    assert "SKILL.md" in fetched.files
    # the body, its headers and the handshake: TLS's own bytes count
    assert told[0] > len(archive) + 1000


async def test_tls_session_tickets_without_end_are_refused_as_they_arrive(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # read below the stream, uncounted, they were bounded by the fetch's deadline only
    archive = build_zip({"SKILL.md": skill_md("tiny", "A tiny skill.", "BODY")}, root="tiny")

    with pytest.raises(FetchError) as refused:
        await fetch_over_tls(monkeypatch, tmp_path, archive, tickets=20_000)

    assert refused.value.code == "download_too_large"
