"""A live gateway (uvicorn on loopback) on each database and a user's token, for the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.app import create_asgi_app
from backend.config import Settings, get_settings
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.cli import Server, Terminal, ok
from tests.support.live import live_server


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


@pytest.fixture
def terminal() -> Iterator[Any]:
    opened: list[Terminal] = []

    def start(args: list[str], env: dict[str, str], **options: Any) -> Terminal:
        opened.append(Terminal(args, env, **options))
        return opened[-1]

    yield start
    for t in opened:
        t.close()
