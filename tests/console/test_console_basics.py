"""Signing in, the security headers of the console, and the page without its packages."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.console import Console, Gateway, screenshots

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)]


def test_sign_in_keeps_the_token_in_session_storage_only(
    console: Console, gateway: Gateway, artifacts: Path
) -> None:
    console.open()
    expect(console.page.get_by_role("heading", name="Sign in")).to_be_visible()
    screenshots(console.page, artifacts, "signin")

    console.page.get_by_label("API token").fill("not-a-token")
    console.page.get_by_role("button", name="Sign in").click()
    expect(console.page.locator(".signin .error")).to_contain_text("invalid_token")

    # by keyboard alone: the token field has focus, Enter submits
    token = console.page.get_by_label("API token")
    token.fill("")
    expect(token).to_be_focused()
    console.page.keyboard.type(gateway.token)
    console.page.keyboard.press("Enter")
    expect(console.page.locator(".me")).to_have_text("admin (admin)")
    # a view takes focus when it opens; Tab then reaches its first control, with visible focus
    expect(console.page.get_by_role("button", name="New conversation")).to_be_visible()
    expect(console.page.locator("main")).to_be_focused()
    console.page.keyboard.press("Tab")
    expect(console.page.get_by_label("Ghost")).to_be_focused()
    outline = "() => getComputedStyle(document.activeElement).outlineStyle"
    assert console.page.evaluate(outline) == "solid"
    stored = console.page.evaluate("() => sessionStorage.getItem('skillhive.token')")
    assert stored == gateway.token
    assert gateway.token not in console.page.url
    assert console.page.context.cookies() == []
    assert console.errors == []


def test_the_api_docs_render_from_this_origin_under_the_consoles_policy(
    console: Console, gateway: Gateway
) -> None:
    # Swagger UI from the console's npm packages, under `script-src 'self'`: a policy it broke
    # (an eval, an inline script) would show as a refused script and an empty page
    refused: list[str] = []
    console.page.on("console", lambda m: refused.append(m.text) if m.type == "error" else None)
    console.page.goto(f"{gateway.url}/docs")
    expect(console.page.locator(".opblock-summary-path").first).to_be_visible()
    expect(console.page.get_by_text("/api/v1/me", exact=True).first).to_be_visible()
    assert refused == [] and console.errors == []
