"""The web console: static files beside the API (`console/` of the install).

`/` is the page, `/console/src/*.js` and `/console/styles.css` its own files, and
`/console/vendor/<name>` one of a fixed set of npm packages' browser bundles, read from
`console/node_modules` (installed by `npm ci --prefix console`; never committed). Without them
the gateway still serves the API, and `/` says how to install them. `/docs` is Swagger UI
from the same packages, under the same policy: FastAPI's own page loads it from a CDN, whose
script would run on the gateway's origin.

Every answer carries a Content-Security-Policy allowing scripts from this origin only (no inline
script, no eval). Styles may be inline because Mermaid's SVG carries its own `<style>`; the SVG
is sanitized with DOMPurify before insertion, so no script comes with it.
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from backend.config import Settings

CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
# name served under /console/vendor/ -> file under node_modules (the only ones served)
VENDOR = {
    "socket.io.esm.min.js": "socket.io-client/dist/socket.io.esm.min.js",
    "purify.es.mjs": "dompurify/dist/purify.es.mjs",
    "marked.esm.js": "marked/lib/marked.esm.js",
    "mermaid.min.js": "mermaid/dist/mermaid.min.js",
    "swagger-ui-bundle.js": "swagger-ui-dist/swagger-ui-bundle.js",
    "swagger-ui.css": "swagger-ui-dist/swagger-ui.css",
}
INSTALL_COMMAND = "npm ci --prefix console"
_OWN_FILE = re.compile(r"\A(?:styles\.css|src/[a-z][a-z0-9_-]*\.js)\Z")
_MEDIA = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css"}

_MISSING_PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Skillhive console</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>Skillhive console</h1>
<p>The console's JavaScript packages are not installed. The API works; to use the console run
<code>{INSTALL_COMMAND}</code> in the repository (or start with <code>./scripts/serve</code>,
which does it) and reload this page.</p></main></body></html>
"""


_MISSING_DOCS = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Skillhive API</title></head>
<body><main><h1>Skillhive API</h1>
<p>The OpenAPI document is at <a href="/openapi.json">/openapi.json</a>. The interactive docs
need the console's packages: run <code>{INSTALL_COMMAND}</code> and reload this page.</p>
</main></body></html>
"""


def console_dir(settings: Settings) -> Path | None:
    """The console folder: the setting, else `console/` beside the source or in the cwd."""
    if settings.console_dir is not None:
        return settings.console_dir if (settings.console_dir / "index.html").is_file() else None
    for candidate in (Path(__file__).resolve().parents[2] / "console", Path.cwd() / "console"):
        if (candidate / "index.html").is_file():
            return candidate
    return None


def vendor_installed(root: Path) -> bool:
    return all((root / "node_modules" / path).is_file() for path in VENDOR.values())


def _not_found() -> Response:
    return Response("not found", status_code=404, media_type="text/plain", headers=HEADERS)


def _file(path: Path) -> Response:
    if not path.is_file():
        return _not_found()
    media = _MEDIA.get(path.suffix, "text/html" if path.suffix == ".html" else "text/plain")
    return FileResponse(path, media_type=media, headers=HEADERS)


def console_router(settings: Settings) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    def root() -> Path | None:
        return console_dir(settings)

    def page(name: str, missing: str) -> Response:
        """A page of the console, or what to install when its packages are absent."""
        folder = root()
        if folder is None or not vendor_installed(folder):
            return HTMLResponse(missing, status_code=200, headers=HEADERS)
        return _file(folder / name)

    @router.get("/")
    async def index(request: Request) -> Response:
        return page("index.html", _MISSING_PAGE)

    @router.get("/docs")
    async def docs(request: Request) -> Response:
        """The interactive API docs, under the console's policy (scripts of this origin only)."""
        return page("docs.html", _MISSING_DOCS)

    @router.get("/console/vendor/{name}")
    async def vendor(name: str) -> Response:
        folder = root()
        if folder is None or name not in VENDOR:
            return _not_found()
        return _file(folder / "node_modules" / VENDOR[name])

    @router.get("/console/{path:path}")
    async def own(path: str) -> Response:
        folder = root()
        # A fixed shape (no `..`, no dot files, no node_modules): nothing else is reachable.
        if folder is None or not _OWN_FILE.match(path):
            return _not_found()
        return _file(folder / path)

    return router
