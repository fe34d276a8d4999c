"""HTTP for imports: every request and every redirect hop through the egress policy.

The egress transport checks each TCP connection it opens (`chat_shell.net`, as `egress_client`
does: no redirects followed by httpx, no environment proxies); redirects are
followed here, one hop at a time, so each new URL is checked as written before its host is
resolved and checked again on connect. All response bodies of one fetch share one byte budget
and one deadline.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol
from urllib.parse import urljoin

import httpx

from backend.skills.importing.errors import FetchFailed, FetchTimeout, refused, too_large
from backend.skills.importing.limits import FetchLimits
from chat_shell import EgressForbidden, EgressPolicy, EgressTransport

MAX_REDIRECTS = 5
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


class BodySink(Protocol):
    """Where a streamed answer goes: its head (a `Fetched` without body) once known, then
    each chunk of its body as it arrives, within the fetch's budget and deadline."""

    def head(self, fetched: Fetched) -> None: ...

    def write(self, chunk: bytes) -> int: ...


class Downloader:
    """One fetch's HTTP client: egress-checked, redirect hops checked, budget and deadline."""

    def __init__(self, policy: EgressPolicy, limits: FetchLimits) -> None:
        self.policy = policy
        self.limits = limits
        self.received = 0
        self.deadline = asyncio.get_running_loop().time() + limits.timeout_seconds
        # One verifying SSL context for every import: building one reads the CA bundle (~0.3 s).
        self._client = httpx.AsyncClient(
            transport=EgressTransport(policy, verify=_ssl_context()),
            # No timer per socket operation: the fetch's deadline (`request`) bounds them all,
            # and each of httpx's timers costs a cancel scope with a deadline per read (~50 µs;
            # a pack arrives in hundreds of reads).
            timeout=None,
            follow_redirects=False,
            trust_env=False,
        )

    async def __aenter__(self) -> Downloader:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._client.aclose()

    def check_deadline(self) -> None:
        if asyncio.get_running_loop().time() > self.deadline:
            raise timed_out(self.limits)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        sink: BodySink | None = None,
    ) -> Fetched:
        """The final response of `url` (redirects followed for GET); raises `FetchError`s.

        With a `sink`, the body goes there as it arrives (the returned `body` is empty).
        """
        try:
            async with asyncio.timeout_at(self.deadline):
                return await self._follow(method, url, headers or {}, content, sink)
        except TimeoutError:
            raise timed_out(self.limits) from None
        except EgressForbidden as exc:
            raise refused("egress_forbidden", f"{exc.message} (import URL or a redirect)") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(
                f"the source could not be fetched ({type(exc).__name__})",
                details={"reason": type(exc).__name__},
            ) from None

    async def _follow(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: bytes | None,
        sink: BodySink | None,
    ) -> Fetched:
        for _ in range(MAX_REDIRECTS + 1):
            self.policy.check_url(url)
            request = self._client.build_request(method, url, headers=headers, content=content)
            response = await self._client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    if method != "GET":
                        raise FetchFailed(
                            f"the source redirected a {method} request",
                            details={"status": response.status_code},
                        )
                    url = urljoin(url, location)
                    continue
                head = Fetched(str(response.url), response.status_code, response.headers, b"")
                if sink is not None:
                    sink.head(head)
                body = await self._read(response, sink)
                return Fetched(head.url, head.status, head.headers, body)
            finally:
                await response.aclose()
        raise FetchFailed(f"more than {MAX_REDIRECTS} redirects", details={"limit": MAX_REDIRECTS})

    async def _read(self, response: httpx.Response, sink: BodySink | None) -> bytes:
        cap = self.limits.download_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and self.received + int(declared) > cap:
            raise too_large("download_too_large", "the download", cap)
        chunks = []  # joined once at the end: each copy of a large body costs
        async for chunk in response.aiter_bytes():
            self.received += len(chunk)
            if self.received > cap:
                raise too_large("download_too_large", "the download", cap)
            if sink is None:
                chunks.append(chunk)
            else:
                sink.write(chunk)
        return b"".join(chunks)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=False)


def timed_out(limits: FetchLimits) -> FetchTimeout:
    return FetchTimeout(
        f"the fetch took longer than {limits.timeout_seconds:g} s",
        details={"limit": limits.timeout_seconds},
    )
