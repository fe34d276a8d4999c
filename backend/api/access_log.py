"""One log line per request: method, path, status, duration, user id. Never headers or query."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("skillhive.access")


class AccessLogMiddleware:
    """Pure ASGI so streamed responses (SSE) are timed to their end and not buffered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        started = time.perf_counter()
        status = 500  # what the client sees if the app dies before starting a response

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            log.info(
                "%s %s %d %.1fms user=%s",
                scope["method"],
                scope["path"],
                status,
                (time.perf_counter() - started) * 1000,
                state.get("user_id", "-"),
            )
