"""Signing in, the security headers of the console, and the page without its packages."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.console.conftest import Console, Gateway, screenshots

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

    console.sign_in(gateway.token)
    expect(console.page.locator(".me")).to_have_text("admin (admin)")
    stored = console.page.evaluate("() => sessionStorage.getItem('skillhive.token')")
    assert stored == gateway.token
    assert gateway.token not in console.page.url
    assert console.page.context.cookies() == []
    assert console.errors == []
