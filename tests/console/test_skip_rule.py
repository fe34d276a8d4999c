"""Without Chromium the browser tests skip naming the Debian package, unless
SKILLHIVE_REQUIRE_BROWSER=1 makes that a failure (CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import browser


def test_without_chromium_the_tests_skip_naming_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.setattr(browser, "DEBIAN_PATH", tmp_path / "chromium")
    monkeypatch.delenv(browser.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="Debian package `chromium`"):
        browser.require_browser()
    monkeypatch.setenv(browser.REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="SKILLHIVE_REQUIRE_BROWSER=1 but .*`chromium`"):
        browser.require_browser()
