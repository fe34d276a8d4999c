"""The console's static files: a fixed set of paths, the npm bundles by name only, a strict
CSP on every answer, and the API unaffected (with an install hint) when the packages are absent.
These routes are outside `/openapi.json` (include_in_schema=False): not part of the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from backend.api.console import CSP, INSTALL_COMMAND, VENDOR
from backend.api.security_headers import API_POLICY
from backend.config import Settings

pytestmark = pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)


def make_console(root: Path, *, vendor: bool) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>console page</title>")
    (root / "docs.html").write_text("<!doctype html><title>api docs page</title>")
    (root / "styles.css").write_text("body { color: black; }")
    (root / "src" / "app.js").write_text("export const app = 1;")
    (root / "package.json").write_text("{}")
    (root / ".env").write_text("SECRET=1")
    (root.parent / "outside.js").write_text("outside")
    if vendor:
        for name, path in VENDOR.items():
            target = root / "node_modules" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"/* {name} */")
        (root / "node_modules" / "other.js").write_text("not served")
    return root


@pytest.fixture
def vendor(request: pytest.FixtureRequest) -> bool:
    """Whether `console/node_modules` holds the bundles (installed unless parametrized)."""
    return bool(getattr(request, "param", True))


@pytest.fixture
def settings(settings: Settings, tmp_path: Path, vendor: bool) -> Settings:
    folder = make_console(tmp_path / "site" / "console", vendor=vendor)
    return settings.model_copy(update={"console_dir": folder})


@pytest.fixture
async def web(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


def assert_hardened(response: httpx.Response) -> None:
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("vendor", [True, False], ids=["installed", "missing"], indirect=True)
async def test_the_page_its_files_and_the_named_bundles_are_served(
    web: httpx.AsyncClient, vendor: bool
) -> None:
    page = await web.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert_hardened(page)
    if vendor:
        assert "console page" in page.text
    else:
        assert INSTALL_COMMAND in page.text and "console page" not in page.text

    for path, media, body in [
        ("/console/src/app.js", "text/javascript", "export const app = 1;"),
        ("/console/styles.css", "text/css", "body { color: black; }"),
    ]:
        response = await web.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith(media)
        assert response.text == body
        assert_hardened(response)

    for name in VENDOR:
        response = await web.get(f"/console/vendor/{name}")
        assert response.status_code == (200 if vendor else 404), name
        assert_hardened(response)
        if vendor:
            assert response.text == f"/* {name} */"
            media = "text/css" if name.endswith(".css") else "text/javascript"
            assert response.headers["content-type"].startswith(media)


UNREACHABLE = [
    "/console/vendor/other.js",
    "/console/vendor/..%2Fother.js",
    "/console/node_modules/other.js",
    "/console/package.json",
    "/console/.env",
    "/console/src/../../outside.js",
    "/console/src/%2e%2e/%2e%2e/outside.js",
    "/console/src/missing.js",
    "/console/index.html/",
    "/console/",
]


async def test_nothing_else_is_reachable(web: httpx.AsyncClient) -> None:
    for path in UNREACHABLE:
        response = await web.get(path)
        assert response.status_code == 404, path
        if response.request.url.path.startswith("/console/"):  # httpx may resolve `..` itself
            assert_hardened(response)
        assert "outside" not in response.text and "SECRET" not in response.text


@pytest.mark.parametrize("vendor", [False], ids=["missing"], indirect=True)
async def test_the_api_is_unaffected(web: httpx.AsyncClient) -> None:
    assert (await web.get("/healthz")).status_code == 200
    refused = await web.get("/api/v1/me")
    assert refused.status_code == 401
    assert refused.headers["content-security-policy"] == API_POLICY.decode()  # not the console's


@pytest.mark.parametrize("vendor", [True, False], ids=["installed", "missing"], indirect=True)
async def test_the_api_docs_are_a_console_page_with_no_script_from_elsewhere(
    web: httpx.AsyncClient, vendor: bool
) -> None:
    # FastAPI's own page loaded Swagger UI from a CDN, whose script ran on this origin
    docs = await web.get("/docs")
    assert docs.status_code == 200
    assert_hardened(docs)
    if vendor:
        assert "api docs page" in docs.text
        for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
            assert (await web.get(f"/console/vendor/{name}")).text == f"/* {name} */"
    else:
        assert INSTALL_COMMAND in docs.text and "/openapi.json" in docs.text
    assert (await web.get("/redoc")).status_code == 404
