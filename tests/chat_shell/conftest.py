"""Shared fixtures of the chat_shell tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_openai_server import FakeOpenAIServer


@pytest.fixture(scope="session")
def _openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def openai_server(_openai_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The scripted OpenAI-compatible server, with an empty script and no recorded requests."""
    _openai_server.script()
    return _openai_server
