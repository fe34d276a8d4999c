"""Headers every HTTP answer carries unless its route set its own (the console's strict CSP,
a served skill file's sandboxing one).

API answers are data, never documents: `nosniff` keeps a browser from reading a JSON or text
body as HTML or script, and `default-src 'none'; frame-ancestors 'none'` keeps one opened or
framed from running or showing anything. The console's pages, `/docs` among them, set their
own (`backend/api/console.py`).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_POLICY = b"default-src 'none'; frame-ancestors 'none'"
_CSP = b"content-security-policy"
_NOSNIFF = b"x-content-type-options"


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {name.lower() for name, _ in headers}
                if _NOSNIFF not in names:
                    headers.append((_NOSNIFF, b"nosniff"))
                if _CSP not in names:
                    headers.append((_CSP, API_POLICY))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
