"""Chat fixtures: a user with a skill, a secret and a Ghost talking to the scripted model server."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, ChatSetup, make_setup
from tests.support.openai_server import FakeOpenAIServer


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url, data_dir=tmp_path / "data", egress_allow=LOOPBACK_ALLOW
    )


@pytest.fixture
async def chat(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> ChatSetup:
    return await make_setup(client, alice, openai_server)
