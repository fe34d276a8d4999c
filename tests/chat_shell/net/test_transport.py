"""The egress-checked httpx client against real listeners on loopback."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path

import httpcore
import httpx
import pytest

from chat_shell.net import (
    EgressForbidden,
    EgressPolicy,
    EgressTransport,
    UnrequestedEncoding,
    egress_client,
)
from tests.support.listener import Listener, http_response
from tests.support.tls import tls_pair

LOOPBACK = EgressPolicy(allow=("127.0.0.1", "::1"))


class RecordingBackend(httpcore.AnyIOBackend):
    """The real backend, remembering which hosts it was asked to connect to."""

    def __init__(self) -> None:
        self.hosts: list[str] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.hosts.append(host)
        return await super().connect_tcp(host, port, timeout, local_address, socket_options)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_by_default_the_listener_receives_no_connection(host: str) -> None:
    async with Listener() as listener, egress_client(EgressPolicy()) as client:
        with pytest.raises(EgressForbidden):
            await client.get(listener.url(host=host))
    assert listener.connections == 0


async def test_with_an_allow_entry_the_request_goes_through() -> None:
    async with Listener() as listener, egress_client(LOOPBACK) as client:
        response = await client.get(listener.url())
    assert (response.status_code, response.text) == (200, "ok")
    assert listener.connections == 1


async def test_a_host_name_is_resolved_once_and_the_checked_address_is_dialled() -> None:
    inner = RecordingBackend()
    transport = EgressTransport(EgressPolicy(allow=("localhost",)), inner=inner)
    async with Listener() as listener, httpx.AsyncClient(transport=transport) as client:
        response = await client.get(listener.url(host="localhost"))
    assert response.status_code == 200
    assert inner.hosts and "localhost" not in inner.hosts  # only addresses reach the socket
    assert f"host: localhost:{listener.port}" in listener.heads[0].lower()  # Host is kept


async def test_redirects_are_not_followed() -> None:
    async with Listener() as target:
        moved = http_response(302, "", {"Location": target.url("/elsewhere")})
        async with Listener(moved) as first, egress_client(LOOPBACK) as client:
            response = await client.get(first.url())
    assert response.status_code == 302
    assert (first.connections, target.connections) == (1, 0)


async def test_tls_runs_against_the_host_name_while_the_socket_goes_to_the_address(
    tmp_path: Path,
) -> None:
    server, client_ctx, seen = tls_pair(tmp_path, "localhost")
    transport = EgressTransport(EgressPolicy(allow=("localhost",)), verify=client_ctx)
    async with Listener(tls=server) as listener, httpx.AsyncClient(transport=transport) as client:
        response = await client.get(listener.url(host="localhost", scheme="https"))
    assert response.status_code == 200
    assert seen == ["localhost"]  # SNI names the host, not the dialled address


async def test_a_certificate_for_another_name_is_refused(tmp_path: Path) -> None:
    server, client_ctx, _ = tls_pair(tmp_path, "other.example")
    transport = EgressTransport(EgressPolicy(allow=("localhost",)), verify=client_ctx)
    async with Listener(tls=server) as listener, httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(listener.url(host="localhost", scheme="https"))


def _gzip_bomb(layers: int = 2, inflated: int = 64 * 1024 * 1024) -> bytes:
    """`inflated` zero bytes, gzipped `layers` times: a few hundred bytes on the wire."""
    data = gzip.compress(bytes(inflated), compresslevel=9)
    for _ in range(layers - 1):
        data = gzip.compress(data, compresslevel=9)
    return data


def _raw_response(body: bytes, headers: dict[str, str]) -> bytes:
    lines = ["HTTP/1.1 200 X", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def test_bodies_are_asked_for_as_sent_and_an_encoded_answer_is_refused_unread() -> None:
    bomb = _gzip_bomb()
    assert len(bomb) < 100_000
    answer = _raw_response(bomb, {"Content-Encoding": "gzip, gzip"})
    async with Listener(answer) as listener, egress_client(LOOPBACK) as client:
        with pytest.raises(UnrequestedEncoding, match="gzip"):
            await client.get(listener.url())
        # A caller's own headers are kept beside the one the client insists on.
        plain = egress_client(LOOPBACK, headers={"Accept-Encoding": "gzip", "X-Kept": "1"})
    assert "accept-encoding: identity" in listener.heads[0].lower()
    async with Listener() as listener, plain:
        assert (await plain.get(listener.url())).text == "ok"
    head = listener.heads[0].lower()
    assert "accept-encoding: identity" in head and "x-kept: 1" in head
