"""Test-time installs of outside programs (npm packages, separate venvs) under `.cache/`.

Installed once per machine: a file lock guards parallel test runs, and a stamp holding the pins
makes a pin change reinstall. CI starts from a clean checkout, so tests install what they need.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache"
INSTALL_TIMEOUT_S = 900


@contextmanager
def locked(name: str) -> Iterator[None]:
    CACHE.mkdir(exist_ok=True)
    with (CACHE / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def install_once(target: Path, pins: list[str], install: Callable[[], None]) -> None:
    stamp = target / ".pins"
    wanted = "\n".join(pins)
    with locked(target.name):
        if stamp.is_file() and stamp.read_text() == wanted:
            return
        shutil.rmtree(target, ignore_errors=True)
        install()
        stamp.write_text(wanted)


def run(*cmd: str | Path) -> None:
    subprocess.run([str(c) for c in cmd], check=True, timeout=INSTALL_TIMEOUT_S)


def npm_install(prefix: Path, *pins: str) -> Path:
    """`npm install` the pinned packages into `prefix`; returns its node_modules."""

    def install() -> None:
        prefix.mkdir(parents=True)
        run("npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", *pins)

    install_once(prefix, list(pins), install)
    return prefix / "node_modules"
