"""A live gateway serving the console, Debian's Chromium driven by Playwright, and helpers.

Every test here runs in a real browser against a real gateway (uvicorn on loopback); they are
`slow` (tests/conftest.py). Screenshots go to `SKILLHIVE_TEST_ARTIFACTS` (else a pytest tmp dir).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from backend.app import create_asgi_app
from backend.config import Settings
from tests.backend.chat.conftest import LOOPBACK_ALLOW
from tests.support.browser import require_browser, require_console_packages
from tests.support.live import live_server

expect.set_options(timeout=20_000)  # a loaded CI machine: waits, never asserts on speed

ADMIN_TOKEN = "console-browser-tests-admin-token-0123456789"
WIDTHS = {"desktop": 1280, "phone": 360}
# Set before any page script: what an injected handler would flip, and CSP violations seen.
GUARD_SCRIPT = """
window.__pwned = false;
window.__violations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__violations.push(
    [e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber, e.sample].join(' ')));
"""


@pytest.fixture(scope="session")
def chromium() -> str:
    path = require_browser()
    require_console_packages()
    return path


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    # Per module, not per session: Playwright's sync API keeps an event loop running (in a
    # greenlet) while it lives, which would break every async test collected after tests/console.
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configured = os.environ.get("SKILLHIVE_TEST_ARTIFACTS")
    folder = Path(configured) if configured else tmp_path_factory.mktemp("console-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        egress_allow=LOOPBACK_ALLOW,  # the scripted model server listens on loopback
        bootstrap_admin_token=ADMIN_TOKEN,
    )


@dataclass
class Gateway:
    url: str
    token: str = ADMIN_TOKEN

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return httpx.request(
            method, f"{self.url}/api/v1{path}", headers=headers, timeout=30, **kwargs
        )


@pytest.fixture
def gateway(chromium: str, settings: Settings) -> Iterator[Gateway]:
    with live_server(create_asgi_app(settings)) as url:
        yield Gateway(url)


@dataclass
class Console:
    """A page of the console and what it logged."""

    page: Page
    base_url: str
    errors: list[str] = field(default_factory=list)

    def open(self, route: str = "") -> None:
        self.page.goto(f"{self.base_url}/#{route}")

    def sign_in(self, token: str) -> None:
        self.open("/signin")
        self.page.get_by_label("API token").fill(token)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.get_by_role("button", name="Sign out").wait_for()

    def injected(self) -> dict[str, Any]:
        """What an injection would leave: the flag, CSP violations, foreign elements."""
        return self.page.evaluate(
            """() => ({
              pwned: window.__pwned,
              violations: window.__violations,
              handlers: [...document.querySelectorAll('*')].filter(
                (el) => [...el.attributes].some((a) => a.name.startsWith('on'))).length,
              imgs: document.querySelectorAll('img[src="x"]').length,
              scripts: [...document.scripts].map((s) => s.src),
            })"""
        )


@pytest.fixture
def console(browser: Browser, gateway: Gateway) -> Iterator[Console]:
    context = browser.new_context(viewport={"width": WIDTHS["desktop"], "height": 900})
    context.add_init_script(GUARD_SCRIPT)
    page = context.new_page()
    page.set_default_timeout(20_000)
    opened = Console(page, gateway.url)
    page.on("pageerror", lambda exc: opened.errors.append(str(exc)))
    try:
        yield opened
    finally:
        context.close()


def screenshots(page: Page, folder: Path, name: str) -> list[Path]:
    """The page at desktop and phone widths (full height); the viewport is restored after."""
    size = page.viewport_size or {"width": WIDTHS["desktop"], "height": 900}
    written = []
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": size["height"]})
        path = folder / f"{name}-{label}.png"
        page.screenshot(path=str(path), full_page=True)
        written.append(path)
    page.set_viewport_size(size)
    return written


def drop_file(page: Page, selector: str, name: str, data: bytes) -> None:
    """Drop a file on an element as a person dragging it from their desktop would."""
    page.locator(selector).first.evaluate(
        """(zone, [name, bytes]) => {
          const transfer = new DataTransfer();
          transfer.items.add(new File([new Uint8Array(bytes)], name, {type: 'application/zip'}));
          for (const type of ['dragenter', 'dragover', 'drop']) {
            const init = {dataTransfer: transfer, bubbles: true, cancelable: true};
            zone.dispatchEvent(new DragEvent(type, init));
          }
        }""",
        [name, list(data)],
    )
