"""Socket.IO fixtures: live gateways (uvicorn) with chosen settings and clients that record
everything they receive, including why they were disconnected."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
import socketio

from backend.app import create_asgi_app
from backend.config import Settings
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, ChatSetup, make_setup
from tests.support.live import live_server
from tests.support.openai_server import FakeOpenAIServer
from tests.support.sockets import Recorder, Socket


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The chat tests' scripted model server is on loopback: reached through an explicit allow."""
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW})


@pytest.fixture
def serve(settings: Settings) -> Iterator[Any]:
    """`serve(**overrides)` starts a live gateway with these settings; its base URL."""
    with ExitStack() as stack:

        def start(**overrides: Any) -> str:
            app = create_asgi_app(settings.model_copy(update=overrides))
            return str(stack.enter_context(live_server(app)))

        yield start


@pytest.fixture
async def connect() -> AsyncIterator[Any]:
    """`await connect(url, token)`: a connected `/chat` socket, closed at the end."""
    opened: list[socketio.AsyncClient] = []

    async def open_socket(url: str, token: str) -> Socket:
        client = socketio.AsyncClient(reconnection=False)
        sock = Socket(client, Recorder(client))
        client.on("disconnect", sock.disconnects.append, namespace="/chat")
        await client.connect(url, namespaces=["/chat"], auth={"token": token}, wait_timeout=10)
        opened.append(client)
        return sock

    yield open_socket
    for client in opened:
        await client.disconnect()


@pytest.fixture
async def chat(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> ChatSetup:
    return await make_setup(client, alice, openai_server)
