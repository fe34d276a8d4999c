"""What the console's browser tests need: Debian's Chromium (driven by Playwright through
`executable_path`; Playwright's own browser download is not used) and the console's npm
packages. Absent, the tests skip naming the Debian package, or fail with
`SKILLHIVE_REQUIRE_BROWSER=1` (set by `.ci/run`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from backend.api.console import INSTALL_COMMAND, VENDOR
from tests.support.installs import locked

REQUIRE = "SKILLHIVE_REQUIRE_BROWSER"
PACKAGE = "chromium"
REPO = Path(__file__).resolve().parents[2]
CONSOLE = REPO / "console"
DEBIAN_PATH = Path("/usr/bin/chromium")  # where the package puts it, if PATH does not say


def chromium_path() -> str | None:
    """Debian's Chromium binary, or None."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and DEBIAN_PATH.is_file():
        found = str(DEBIAN_PATH)
    return found


def vendor_installed(root: Path = CONSOLE) -> bool:
    return all((root / "node_modules" / path).is_file() for path in VENDOR.values())


def unavailable(message: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {message}")
    pytest.skip(message)


def require_browser() -> str:
    """Chromium's path; skip (or fail) without it."""
    path = chromium_path()
    if path is None:
        unavailable(f"no Chromium for the console's browser tests (Debian package `{PACKAGE}`)")
    assert path is not None
    return path


def require_console_packages() -> None:
    """`console/node_modules`, installed with `npm ci --prefix console` when npm exists.

    pytest-xdist workers reach this at the same time; `npm ci` empties node_modules first, so two
    concurrent runs break each other. One worker installs under an exclusive lock, the others wait
    and then find the packages in place."""
    if vendor_installed():
        return
    npm = shutil.which("npm")
    if npm is None:
        unavailable(f"console/node_modules is missing, and no npm to run `{INSTALL_COMMAND}`")
    assert npm is not None
    with locked("console-npm"):
        if vendor_installed():
            return
        done = subprocess.run(
            [npm, "ci", "--prefix", str(CONSOLE), "--no-audit", "--no-fund", "--ignore-scripts"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode != 0 or not vendor_installed():
        pytest.fail(f"`{INSTALL_COMMAND}` failed:\n{done.stdout}\n{done.stderr}")
