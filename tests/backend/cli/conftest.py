"""A live gateway (uvicorn on loopback) on each database and a user's token, for the CLI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
