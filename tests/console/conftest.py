"""A live gateway serving the console, Debian's Chromium driven by Playwright, and helpers.

Every test here runs in a real browser against a real gateway (uvicorn on loopback); they are
`slow` (tests/conftest.py). Screenshots go to `SKILLHIVE_TEST_ARTIFACTS` (else a pytest tmp dir).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from backend.app import create_asgi_app
from backend.config import Settings
from tests.support.browser import require_browser, require_console_packages
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.console import ADMIN_TOKEN, GUARD_SCRIPT, WIDTHS, Console, Gateway
from tests.support.live import live_server

expect.set_options(timeout=20_000)  # a loaded CI machine: waits, never asserts on speed


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


@pytest.fixture
def gateway(chromium: str, settings: Settings) -> Iterator[Gateway]:
    with live_server(create_asgi_app(settings)) as url:
        yield Gateway(url)


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
