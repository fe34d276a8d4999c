"""A live gateway (uvicorn on loopback) on each database and a user's token, for the CLI."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from backend.app import create_asgi_app
from backend.cli import app as cli
from backend.config import Settings, get_settings
from tests.backend.chat.conftest import LOOPBACK_ALLOW
from tests.support.live import live_server

runner = CliRunner()


def invoke(*args: str, input: str | None = None) -> Result:
    return runner.invoke(cli, list(args), input=input)


def ok(*args: str, input: str | None = None) -> str:
    """Run a command that must succeed; its stdout."""
    result = invoke(*args, input=input)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


@dataclass
class Server:
    url: str
    token: str

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a CLI subprocess talking to this server."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLHIVE_")}
        return {**env, "SKILLHIVE_URL": self.url, "SKILLHIVE_TOKEN": self.token, **extra}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The scripted model server listens on loopback: reached through an explicit allow."""
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW})


@pytest.fixture
def server(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Server]:
    monkeypatch.setenv("SKILLHIVE_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("SKILLHIVE_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SKILLHIVE_NAMESPACE", raising=False)
    get_settings.cache_clear()
    token = ok("admin", "create-user", "ada").strip().splitlines()[-1]
    try:
        with live_server(create_asgi_app(settings)) as url:
            monkeypatch.setenv("SKILLHIVE_URL", url)
            monkeypatch.setenv("SKILLHIVE_TOKEN", token)
            yield Server(url, token)
    finally:
        get_settings.cache_clear()


class Terminal:
    """A CLI process on a pseudo-terminal that it has as its controlling terminal, so the
    line discipline turns a typed Ctrl-C into SIGINT as in a real shell."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        skillhive = str(Path(sys.executable).parent / "skillhive")
        self.process = subprocess.Popen(
            ["setsid", "-c", skillhive, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
        )
        os.close(slave)
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def read_until(self, needle: str, *, deadline_s: float = 60) -> str:
        """Everything read so far once `needle` appears after the previous mark."""
        assert self._wait_for(needle, deadline_s), f"{needle!r} never appeared in:\n{self.seen}"
        found, self.seen = self.seen, self.seen[self.seen.index(needle) + len(needle) :]
        return found

    def interrupt_at_prompt(self, until: str, *, tries: int = 10) -> None:
        """Ctrl-C at the `> ` prompt until `until` shows.

        Python's input() loses a SIGINT that lands after the prompt is written but before the
        read(2) starts (the handler only sets a flag; nothing interrupts the read). A person
        cannot type inside that window; a test on a busy machine can, so it presses again. A
        second press while the first is pending still gives one KeyboardInterrupt."""
        for _ in range(tries):
            self.type("\x03")
            if self._wait_for(until, 3.0):
                self.read_until(until)
                return
        raise AssertionError(f"Ctrl-C at the prompt had no effect; output:\n{self.seen}")

    def _wait_for(self, needle: str, deadline_s: float) -> bool:
        end = time.monotonic() + deadline_s
        while needle not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the process is gone (EIO)
                    chunk = b""
                if not chunk:
                    assert needle in self.seen, f"{needle!r} not in:\n{self.seen}"
                self.seen += chunk.decode(errors="replace")
        return True

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        os.close(self.master)


@pytest.fixture
def terminal() -> Iterator[Any]:
    opened: list[Terminal] = []

    def start(args: list[str], env: dict[str, str]) -> Terminal:
        opened.append(Terminal(args, env))
        return opened[-1]

    yield start
    for t in opened:
        t.close()
