"""Headers every HTTP answer carries unless its route set its own (the console's strict CSP,
a served skill file's sandboxing one).

API answers are data, never documents: `nosniff` keeps a browser from reading a JSON or text
body as HTML or script, and `default-src 'none'; frame-ancestors 'none'` keeps one opened or
framed from running or showing anything. The interactive API docs (`/docs`, `/redoc`) are pages
that load Swagger UI and ReDoc: they may not be framed, and get no other policy.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_POLICY = b"default-src 'none'; frame-ancestors 'none'"
DOCS_POLICY = b"frame-ancestors 'none'"
DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})
_CSP = b"content-security-policy"
_NOSNIFF = b"x-content-type-options"


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = DOCS_POLICY if scope["path"] in DOCS_PATHS else API_POLICY

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {name.lower() for name, _ in headers}
                if _NOSNIFF not in names:
                    headers.append((_NOSNIFF, b"nosniff"))
                if _CSP not in names:
                    headers.append((_CSP, policy))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
