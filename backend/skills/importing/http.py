"""HTTP for imports: every request and every redirect hop through the egress policy.

A fetch's requests are made in the import's worker thread with httpx's blocking client, and
each body is read where it is used: dulwich reads a git answer straight off the socket as the
pack arrives, with no event-loop task, pipe or thread hop per chunk of it.

The egress check sits in the network backend, where each TCP connection is opened (as
`chat_shell.net`'s `EgressTransport` does for async clients): the host is resolved by the
policy on the event loop, every address is checked, and the socket goes to a checked address.
No redirects are followed by httpx and no environment proxies are read; redirects are followed
here, one hop at a time, so each new URL is checked as written before its host is resolved and
checked again on connect. All response bodies of one fetch share one byte budget, and one
deadline bounds every resolve, connect, read and write of it.

Bodies are asked for and read as sent (`Accept-Encoding: identity`, `iter_raw`): httpx's
decoders inflate a whole chunk at once, through stacked encodings, before any budget could be
checked (a 373-byte answer became a 128 MiB chunk). An archive's own compression is inflated
later by the package reader, which bounds it (`_KEPT_ENCODINGS`).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urljoin

import httpcore
import httpx

from backend.skills.importing.errors import FetchFailed, FetchTimeout, refused, too_large
from backend.skills.importing.limits import FetchLimits
from chat_shell import EgressForbidden, EgressPolicy, content_encoding, readable_url

MAX_REDIRECTS = 5
# Read as sent, a gzip answer is a gzip stream: what a `.tar.gz` is, and servers that label
# one `Content-Encoding: gzip` (Apache's AddEncoding, S3 metadata) ignore `identity`. The
# archive reader inflates it within its own caps. Any other coding would reach a reader that
# cannot read it: refused with its name (an error answer's body is not judged).
_KEPT_ENCODINGS = frozenset({"", "gzip", "x-gzip"})
_REDIRECTS = {301, 302, 303, 307, 308}


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def content_type(self) -> str:
        return str(self.headers.get("content-type", ""))


class Downloader:
    """One fetch's HTTP client: egress-checked, redirect hops checked, budget and deadline.

    Made on the event loop (the policy resolves host names there), used from worker threads,
    one at a time: its methods block.
    """

    def __init__(self, policy: EgressPolicy, limits: FetchLimits) -> None:
        self.policy = policy
        self.limits = limits
        self.received = 0  # every byte read off the fetch's connections
        self._before_answer = 0  # `received` when the last request was sent
        self.deadline = time.monotonic() + limits.timeout_seconds
        backend = _EgressBackend(policy, asyncio.get_running_loop(), self.remaining, self._charge)
        self._client = httpx.Client(
            transport=_Transport(backend),
            # No timer of httpx's: the fetch's deadline bounds every socket operation.
            timeout=None,
            follow_redirects=False,
            trust_env=False,
            headers={"Accept-Encoding": "identity"},
        )

    def __enter__(self) -> Downloader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._client.close()

    def remaining(self) -> float:
        """Seconds left before the deadline; `FetchTimeout` once it has passed."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise timed_out(self.limits)
        return left

    def check_deadline(self) -> None:
        self.remaining()

    def _charge(self, size: int) -> None:
        """Bytes read off a connection: headers, chunk framing, redirects and bodies alike (a
        body's count alone missed 8 KB chunk extensions around each 1-byte chunk)."""
        self.received += size
        if self.received > self.limits.download_bytes:
            raise too_large("download_too_large", "the download", self.limits.download_bytes)

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> Fetched:
        """The final response of `url`, its body read whole (redirects followed for GET);
        raises `FetchError`s."""
        with self.errors():
            response = self._follow(method, url, headers or {}, content)
            try:
                body = b"".join(self._body(response))  # joined once: each copy costs
            finally:
                response.close()
        return Fetched(str(response.url), response.status_code, response.headers, body)

    def stream(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> StreamedBody:
        """The final response of `url`, its body read as it arrives (`StreamedBody.read`)."""
        with self.errors():
            return StreamedBody(self, self._follow(method, url, headers or {}, content))

    @contextmanager
    def errors(self) -> Iterator[None]:
        """httpx's and the egress policy's errors as `FetchError`s."""
        try:
            yield
        except httpx.TimeoutException:
            raise timed_out(self.limits) from None
        except EgressForbidden as exc:
            raise refused("egress_forbidden", f"{exc.message} (import URL or a redirect)") from None
        except (httpx.InvalidURL, UnicodeError):
            # A redirect to a URL httpx cannot parse (httpx reads a redirect's `Location` even
            # when it follows none), or a host name no resolver can encode: idna's errors are
            # UnicodeErrors. The import's own URL was refused before (`readable_url`).
            raise _malformed_redirect() from None
        except httpx.HTTPError as exc:
            raise FetchFailed(
                f"the source could not be fetched ({type(exc).__name__})",
                details={"reason": type(exc).__name__},
            ) from None

    def _follow(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> httpx.Response:
        """The open response after redirects (the caller closes it)."""
        if _on_event_loop():  # it would block the loop (and wait on it to resolve names)
            raise RuntimeError("a Downloader blocks: call it from a worker thread")
        for _ in range(MAX_REDIRECTS + 1):
            self.policy.check_url(url)
            request = self._client.build_request(method, url, headers=headers, content=content)
            self._before_answer = self.received  # its bytes may arrive with the headers
            response = self._client.send(request, stream=True)
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or not location:
                return response
            response.close()
            if method != "GET":
                raise FetchFailed(
                    f"the source redirected a {method} request",
                    details={"status": response.status_code},
                )
            url = urljoin(url, location)
            if not readable_url(url):  # the source's fault, not a refused address
                raise _malformed_redirect()
        raise FetchFailed(f"more than {MAX_REDIRECTS} redirects", details={"limit": MAX_REDIRECTS})

    def _body(self, response: httpx.Response) -> Iterator[bytes]:
        """The body's chunks as they arrive (the connection charges them to the budget)."""
        cap = self.limits.download_bytes
        encoding = content_encoding(response.headers)
        if encoding not in _KEPT_ENCODINGS and response.is_success:
            raise FetchFailed(
                "the source answered with a Content-Encoding it was not asked for",
                details={"reason": "content_encoding", "encoding": encoding[:40]},
            )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and self._before_answer + int(declared) > cap:
            raise too_large("download_too_large", "the download", cap)
        # as sent: never decoded here (module docstring); charged as read (`_charge`)
        yield from response.iter_raw()


class StreamedBody:
    """An answer whose body is read as it arrives, within the fetch's budget and deadline.

    `read(n)` returns exactly `n` bytes (fewer only at the end), as dulwich reads pkt-lines;
    `close` stops the download (dulwich closes the answer once it has read what it needs).
    """

    def __init__(self, downloader: Downloader, response: httpx.Response) -> None:
        self.head = Fetched(str(response.url), response.status_code, response.headers, b"")
        self._downloader = downloader
        self._response = response
        self._chunks = downloader._body(response)
        self._buffer = b""
        self._at = 0  # bytes of `_buffer` already read

    def read(self, size: int) -> bytes:
        if len(self._buffer) - self._at < size:
            self._fill(size)
        at = self._at
        if at == 0 and size >= len(self._buffer):
            data, self._buffer = self._buffer, b""  # the whole chunk, not copied
            return data
        data = self._buffer[at : at + size]
        self._at = at + len(data)
        return data

    def _fill(self, size: int) -> None:
        """The next chunks into the buffer until it holds `size` bytes or the body ends.

        Only here does a read wait for the network: a read the buffer answers costs no more
        than a slice (dulwich reads each pkt-line's 4-byte length, then its data)."""
        parts = [self._buffer[self._at :]] if self._at < len(self._buffer) else []
        have = len(self._buffer) - self._at
        with self._downloader.errors():
            while have < size:
                chunk = next(self._chunks, b"")
                if not chunk:
                    break
                parts.append(chunk)
                have += len(chunk)
        self._buffer = parts[0] if len(parts) == 1 else b"".join(parts)
        self._at = 0

    def close(self) -> None:
        self._response.close()


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every operation waits at most until the fetch's deadline: no timer
    per operation, yet a source that trickles its answer is cut when the fetch's time ends."""

    def __init__(
        self,
        inner: httpcore.NetworkStream,
        remaining: Callable[[], float],
        charge: Callable[[int], None],
    ) -> None:
        self._inner = inner
        self._remaining = remaining
        self._charge = charge  # every byte read counts against the fetch's download budget

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, timeout=self._remaining())
        self._charge(len(data))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout=self._remaining())

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return _MemoryTLS(self, ssl_context, server_hostname)

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class _MemoryTLS(httpcore.NetworkStream):
    """TLS in memory over the charged, deadline-bound connection: the handshake, every record
    and every post-handshake message (session tickets) is read through it and counts. An
    `SSLSocket` read them below the stream, uncounted: a server sending tickets without end
    was bounded by the deadline only. (httpcore's `TLSinTLSStream` works the same way.)"""

    _RECORD = 16384

    def __init__(
        self, raw: _DeadlineStream, context: ssl.SSLContext, server_hostname: str | None
    ) -> None:
        self._raw = raw
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(
            self._incoming, self._outgoing, server_hostname=server_hostname
        )
        try:
            self._io(self._tls.do_handshake)
        except ssl.SSLError as exc:  # as httpcore's own TLS start raises it
            raise httpcore.ConnectError(str(exc)) from exc

    def _io(self, step: Callable[[], Any]) -> Any:
        while True:
            try:
                result = step()
            except ssl.SSLWantReadError:
                wants_read = True
            else:
                wants_read = False
            pending = self._outgoing.read()
            if pending:
                self._raw.write(pending)
            if not wants_read:
                return result
            data = self._raw.read(self._RECORD)
            if data:
                self._incoming.write(data)
            else:
                self._incoming.write_eof()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return bytes(self._io(lambda: self._tls.read(max_bytes)))
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return b""  # closed, cleanly or not: the end of the answer, as an SSLSocket reads it
        except ssl.SSLError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        try:
            while view:
                view = view[self._io(functools.partial(self._tls.write, view)) :]
        except ssl.SSLError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        self._raw.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("TLS inside TLS is not used by imports")

    def get_extra_info(self, info: str) -> object:
        if info == "ssl_object":
            return self._tls
        return self._raw.get_extra_info(info)


class _EgressBackend(httpcore.NetworkBackend):
    """Blocking TCP connections to policy-checked addresses only, within the deadline."""

    def __init__(
        self,
        policy: EgressPolicy,
        loop: asyncio.AbstractEventLoop,
        remaining: Callable[[], float],
        charge: Callable[[int], None],
    ) -> None:
        self._policy = policy
        self._loop = loop
        self._remaining = remaining
        self._charge = charge
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        failure: Exception | None = None
        for address in self._resolve(host, port):
            try:
                stream = self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=self._remaining(),
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
            else:
                return _DeadlineStream(stream, self._remaining, self._charge)
        assert failure is not None  # getaddrinfo answers at least one address or raises
        raise failure

    def _resolve(self, host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        """The policy's checked addresses of `host`, resolved on the event loop (the one
        resolver and check every egress client uses), waited for within the deadline."""
        future = asyncio.run_coroutine_threadsafe(
            self._policy.resolve_and_check(host, port), self._loop
        )
        try:
            return future.result(timeout=self._remaining())
        except TimeoutError:
            future.cancel()
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
        except OSError as exc:  # name resolution failed
            raise httpcore.ConnectError(str(exc)) from exc

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise EgressForbidden("unix sockets are not reachable through the egress policy")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _Transport(httpx.HTTPTransport):
    """`httpx.HTTPTransport` over `_EgressBackend`; never uses a proxy."""

    def __init__(self, backend: _EgressBackend) -> None:
        super().__init__(verify=_ssl_context(), trust_env=False)
        # The parent built its pool without a way to pass a network backend: replace it.
        self._pool = httpcore.ConnectionPool(ssl_context=_ssl_context(), network_backend=backend)


def _malformed_redirect() -> FetchFailed:
    return FetchFailed("the source redirected to a malformed URL", details={"reason": "InvalidURL"})


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying SSL context for every import: building one reads the CA bundle (~0.3 s)."""
    return httpx.create_ssl_context(trust_env=False)


def timed_out(limits: FetchLimits) -> FetchTimeout:
    return FetchTimeout(
        f"the fetch took longer than {limits.timeout_seconds:g} s",
        details={"limit": limits.timeout_seconds},
    )
