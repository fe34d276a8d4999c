"""httpx clients that connect only where an `EgressPolicy` allows.

The check sits in httpcore's network backend, where every new TCP connection is opened: the
host is resolved once, every address is checked, and the socket goes to a checked address.
TLS still runs against the URL's host name (SNI and certificate verification) and the `Host`
header is untouched, because httpcore only asks the backend for a stream and does the rest
itself. Connections are pooled per host name, each opened through the check, and the client
follows no redirects and reads no proxy settings from the environment (a proxy would do its
own resolution).

Use `egress_client(policy)` wherever the service fetches a URL a tenant chose.

Such a client asks for bodies as sent (`Accept-Encoding: identity`) and refuses an answer that
is encoded anyway, before its body is read: httpx inflates each chunk whole, through stacked
encodings, so a few hundred bytes of gzip in gzip could become gigabytes in the reader's
memory, whatever byte count the reader then checks.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore
import httpx

from chat_shell.net.egress import EgressForbidden, EgressPolicy

_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)  # httpx's defaults


class EgressNetworkBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP streams to policy-checked addresses only (see the module doc)."""

    def __init__(self, policy: EgressPolicy, inner: httpcore.AsyncNetworkBackend | None = None):
        self._policy = policy
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await self._policy.resolve_and_check(host, port)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from exc
        except OSError as exc:  # name resolution failed
            raise httpcore.ConnectError(str(exc)) from exc
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # getaddrinfo answers at least one address or raises
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise EgressForbidden("unix sockets are not reachable through the egress policy")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class EgressTransport(httpx.AsyncHTTPTransport):
    """`httpx.AsyncHTTPTransport` over `EgressNetworkBackend`; never uses a proxy."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits = _LIMITS,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        super().__init__(verify=verify, limits=limits, trust_env=False)
        # The parent built its pool without a way to pass a network backend: replace it.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=EgressNetworkBackend(policy, inner),
        )


class UnrequestedEncoding(httpx.DecodingError):
    """An answer whose `Content-Encoding` the client did not ask for (see the module doc)."""


def content_encoding(headers: httpx.Headers) -> str:
    """The answer's content coding, lower-cased; "" when it is sent as is."""
    value = headers.get("content-encoding", "").strip().lower()
    return "" if value == "identity" else value


async def refuse_encoded(response: httpx.Response) -> None:
    """A `response` event hook: an encoded answer raises before its body is read."""
    encoding = content_encoding(response.headers)
    if encoding:
        await response.aclose()
        raise UnrequestedEncoding(
            f"the answer is {encoding[:40]!r}-encoded; only identity was accepted",
            request=response.request,
        )


def egress_client(policy: EgressPolicy, **options: Any) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` for tenant-chosen URLs: checked connections, no redirects, no
    environment proxies, bodies as sent. `options` are further `httpx.AsyncClient` arguments
    (headers, timeout, auth, event_hooks, ...). Close it (`async with` or `aclose()`) when done."""
    options.setdefault("timeout", 30.0)
    headers = httpx.Headers(options.pop("headers", None))
    headers["Accept-Encoding"] = "identity"
    hooks = dict(options.pop("event_hooks", None) or {})
    hooks["response"] = [refuse_encoded, *hooks.get("response", [])]  # before any reads it
    return httpx.AsyncClient(
        **options,
        headers=headers,
        event_hooks=hooks,
        transport=EgressTransport(policy),
        follow_redirects=False,
        trust_env=False,
    )
