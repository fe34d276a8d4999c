"""Request bodies: authenticated before they are read, capped while they stream, 413s readable.

Pure ASGI, in front of FastAPI, because FastAPI reads a JSON body before it resolves any
dependency (authentication included): without this, anyone could make the gateway buffer a
200 MB body just to answer 401.

For every request that carries a body:
1. `/api/...` requests must hold a valid token, checked before a byte of the body is read
   (401 otherwise; the body is never read).
2. The route's cap: skill uploads the archive cap (plus multipart overhead), `/apply` its own,
   everything else `SKILLHIVE_MAX_JSON_BODY_BYTES`. A declared `Content-Length` over the cap is
   refused up front; a chunked body is counted as it streams and refused at the cap, whatever
   the route was doing with it.
3. Before any 413 goes out (this module's or a route's), the rest of a body of declared length
   is drained, up to `DRAIN_MAX_BYTES`, and thrown away: a client that writes its whole body
   before reading (like Python's `urllib`) would otherwise see a connection reset instead of
   the 413. A chunked body over its cap is not read any further; the connection closes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.api.deps import bearer_token
from backend.api.errors import DEPENDENCY_ERRORS, dependency_unavailable, error_response
from backend.api.file_upload import too_large as file_too_large
from backend.api.routes.apply import MAX_APPLY_BYTES
from backend.api.upload import MULTIPART_OVERHEAD
from backend.config import Settings
from backend.errors import PayloadTooLarge, SkillhiveError
from backend.skills.errors import ErrorCode, PackageError

DRAIN_MAX_BYTES = 64 * 1024 * 1024  # thrown away at most, to let a 413 be read
DRAIN_TIMEOUT_S = 10.0
# Skill uploads: POST to a skills collection, PUT to one skill (namespaced or public).
_UPLOAD = re.compile(r"/api/v1/(?:namespaces/[^/]+|public)/skills(?:/[^/]+)?/?")
_APPLY = "/api/v1/apply"
_FILES = re.compile(r"/api/v1/conversations/[^/]+/files/?")  # a user's file for the sandbox
_CLOSE = (b"connection", b"close")


@dataclass(frozen=True)
class BodyCap:
    limit: int  # bytes the body may have
    # The 413 when it has more, made then: an exception per request cost more than the check.
    error: Callable[[], SkillhiveError]


def body_cap(method: str, path: str, settings: Settings) -> BodyCap:
    """The cap of the route `method path` (one table for every route)."""
    if method in ("POST", "PUT") and _UPLOAD.fullmatch(path):
        archive = settings.max_archive_bytes
        return BodyCap(archive + MULTIPART_OVERHEAD, lambda: _archive_too_large(archive))
    if method == "POST" and _FILES.fullmatch(path):
        file_limit = settings.conversation_file_max_bytes
        return BodyCap(file_limit + MULTIPART_OVERHEAD, lambda: file_too_large(file_limit))
    limit = MAX_APPLY_BYTES if path == _APPLY else settings.max_json_body_bytes
    return BodyCap(limit, lambda: too_large(limit))


def _archive_too_large(limit: int) -> PackageError:
    return PackageError(
        ErrorCode.ARCHIVE_TOO_LARGE, f"archive is larger than {limit} bytes", limit=limit
    )


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the body exceeds the {limit} byte limit",
        code="body_too_large",
        details={"limit_bytes": limit},
    )


class _Overflow(HTTPException):
    """Raised into the app when its body passes the cap; FastAPI lets HTTPExceptions through."""

    def __init__(self) -> None:
        super().__init__(status_code=413)


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = _content_length(headers)
        if declared == 0 or (declared is None and "transfer-encoding" not in headers):
            await self.app(scope, receive, send)  # no body: nothing to guard
            return
        body = _Body(receive, declared, expect_continue="100-continue" in headers.get("expect", ""))
        if scope["path"].startswith("/api/"):
            try:
                await _authenticate(scope, headers, self.settings)
            except SkillhiveError as exc:  # the body stays unread
                await _respond(scope, send, exc, close=True)
                return
        cap = body_cap(scope["method"], scope["path"], self.settings)
        if declared is not None and declared > cap.limit:
            await _respond(scope, send, cap.error(), close=not await body.drain())
            return
        await _CappedExchange(self.app, scope, body, send, cap).run()


class _Body:
    """The request's receive channel, counting bytes and remembering whether it is used up."""

    def __init__(self, receive: Receive, declared: int | None, *, expect_continue: bool) -> None:
        self._receive = receive
        self.declared = declared
        self.expect_continue = expect_continue
        self.received = 0
        self.done = False
        self.started = False

    async def receive(self) -> Message:
        self.started = True
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            self.done = not message.get("more_body", False)
        else:
            self.done = True  # disconnected: nothing more will come
        return message

    async def drain(self) -> bool:
        """Read and discard the rest of the body (bounded); True when all of it was read."""
        if self.done:
            return True
        if self.expect_continue and not self.started:
            return False  # the client waits for `100 Continue` and will not send the body
        if self.declared is None or self.declared - self.received > DRAIN_MAX_BYTES:
            return False  # unknown or too much: answer now and close
        limit = self.received + DRAIN_MAX_BYTES
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                while not self.done and self.received <= limit:
                    await self.receive()
        except TimeoutError:
            return False
        return self.done


class _CappedExchange:
    """One request passed to the app with a counted body; any 413 is sent after a drain."""

    def __init__(self, app: ASGIApp, scope: Scope, body: _Body, send: Send, cap: BodyCap) -> None:
        self.app = app
        self.scope = scope
        self.body = body
        self._send = send
        self.cap = cap
        self.overflow = False
        self.started = False
        self.replaced = False

    async def run(self) -> None:
        try:
            await self.app(self.scope, self.receive, self.send)
        except _Overflow:
            if not self.started:
                await self._reject()

    async def receive(self) -> Message:
        message = await self.body.receive()
        if self.body.received > self.cap.limit:
            self.overflow = True
            raise _Overflow()
        return message

    async def send(self, message: Message) -> None:
        if self.replaced:
            return  # the app's own answer to the overflow: ours went out instead
        if message["type"] == "http.response.start":
            self.started = True
            if self.overflow:
                await self._reject()
                return
            if message["status"] == 413 and not await self.body.drain():
                # A route refused the body and not all of it could be drained: say so.
                message = {**message, "headers": [*message["headers"], _CLOSE]}
        await self._send(message)

    async def _reject(self) -> None:
        self.started = self.replaced = True
        await _respond(self.scope, self._send, self.cap.error(), close=not await self.body.drain())


async def _authenticate(scope: Scope, headers: Headers, settings: Settings) -> None:
    token = bearer_token(headers.get("authorization"))
    try:
        identity = await scope["app"].state.auth.identify(token)
    except DEPENDENCY_ERRORS as exc:  # as the API's handler maps them
        raise dependency_unavailable(exc, settings.retry_after_seconds) from None
    state = scope.setdefault("state", {})
    state["user_id"] = identity.user.id  # read by the access log
    state["identity"] = identity  # the route's `CurrentIdentity` takes it instead of asking again


async def _respond(scope: Scope, send: Send, exc: SkillhiveError, *, close: bool) -> None:
    response = error_response(exc.status_code, exc.code, exc.message, exc.details)
    if close:
        response.headers["connection"] = "close"
    await response(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


def _content_length(headers: Headers) -> int | None:
    value = headers.get("content-length")
    return int(value) if value is not None and value.isdigit() else None
