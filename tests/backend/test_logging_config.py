"""Logging: our loggers follow SKILLHIVE_LOG_LEVEL; libraries that log secrets stay at WARNING."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from backend.config import Settings
from backend.logging_config import configure_logging, logging_dict
from tests.support.accounts import Account
from tests.support.cluster import free_port
from tests.support.ghosts import PUBLIC, ghost
from tests.support.mcp_servers import FIXTURE_SERVER, http_server
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall

MESSAGE = "message-sentinel-7f3a"
URL_QUERY = "query-sentinel-91bc"
SECRET = "secret-sentinel-c0de"
MODEL_KEY = "sk-model-sentinel-55aa"
SENTINELS = (MESSAGE, URL_QUERY, SECRET, MODEL_KEY)


def test_our_loggers_follow_the_level_and_libraries_stay_at_warning() -> None:
    config = logging_dict("DEBUG")

    assert config["root"]["level"] == "WARNING"
    for name in ("skillhive", "backend", "chat_shell"):
        assert config["loggers"][name]["level"] == "DEBUG"
    for name in ("mcp", "httpx", "httpcore", "sqlalchemy", "openai", "socketio", "uvicorn.error"):
        assert config["loggers"][name]["level"] == "WARNING"


def test_a_quieter_level_applies_to_libraries_too() -> None:
    config = logging_dict("ERROR")

    assert config["root"]["level"] == config["loggers"]["httpx"]["level"] == "ERROR"


def test_loggers_the_operator_names_get_their_level() -> None:
    config = logging_dict("INFO", {"httpx": "DEBUG", "sqlalchemy.engine": "INFO"})

    assert config["loggers"]["httpx"]["level"] == "DEBUG"
    assert config["loggers"]["sqlalchemy.engine"]["level"] == "INFO"
    assert config["loggers"]["httpcore"]["level"] == "WARNING"


def test_the_setting_is_a_json_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLHIVE_LOG_LEVELS", '{"httpx": "DEBUG"}')

    assert Settings().log_levels == {"httpx": "DEBUG"}


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.lines: list[str] = []
        self.names: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.names.add(record.name)


@contextmanager
def configured(level: str, overrides: Mapping[str, str] | None = None) -> Iterator[_Capture]:
    """Apply the real configuration, capture what reaches the root handlers, then restore."""
    root = logging.getLogger()
    handlers, root_level = root.handlers[:], root.level
    loggers = [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    levels = {logger.name: logger.level for logger in loggers}
    configure_logging(level, overrides)
    capture = _Capture()
    root.addHandler(capture)
    try:
        yield capture
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(root_level)
        for logger in logging.root.manager.loggerDict.values():
            if isinstance(logger, logging.Logger):
                logger.setLevel(levels.get(logger.name, logging.NOTSET))


@pytest.fixture(scope="module")
def mcp_base() -> Iterator[str]:
    port = free_port()
    with http_server([sys.executable, str(FIXTURE_SERVER), "http", str(port)], port) as base:
        yield base


async def run_turn_with_sentinels(
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
    mcp_base: str,
) -> dict[str, Any]:
    """A turn of a public Ghost whose MCP URL query, MCP secret, model key and user message all
    carry sentinels; the model calls the MCP tool that echoes the secret header back."""
    for name, value in (("MODEL_KEY", MODEL_KEY), ("MCP_KEY", SECRET)):
        put = await client.put(
            f"/api/v1/secrets/{name}", json={"value": value}, headers=alice.headers
        )
        assert put.status_code in (201, 204), put.text
    server = {
        "type": "http",
        "url": f"{mcp_base}/mcp?token={URL_QUERY}",
        "headers": {"Authorization": "Bearer ${{secrets.MCP_KEY}}"},
    }
    model = {"name": "scripted", "baseUrl": openai_server.base_url, "apiKeySecret": "MODEL_KEY"}
    body = ghost("logged", model=model, mcpServers={"fx": server})
    created = await client.post(PUBLIC, json=body, headers=admin.headers)
    assert created.status_code == 201, created.text
    conversation = await client.post(
        "/api/v1/conversations", json={"ghost": "public/logged"}, headers=alice.headers
    )
    cid = conversation.json()["id"]
    openai_server.script(
        Reply(tool_calls=[ToolCall("get_header", {"name": "authorization"})]), Reply(text="ok")
    )
    reply = await client.post(
        f"/api/v1/conversations/{cid}/messages",
        json={"content": f"please look at {MESSAGE}"},
        headers=alice.headers,
    )
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    assert answer["status"] == "ok", answer
    return answer


async def test_a_turn_at_debug_logs_no_secret_url_query_or_message_content(
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
    mcp_base: str,
) -> None:
    with configured("DEBUG") as capture:
        answer = await run_turn_with_sentinels(client, alice, admin, openai_server, mcp_base)

    (tool_call,) = answer["tool_calls"]
    assert tool_call["result"] == f"Bearer {SECRET}"  # the secret really went to the server
    assert "skillhive.access" in capture.names  # the capture saw the turn's requests
    text = "\n".join(capture.lines)
    assert [s for s in SENTINELS if s in text] == []


async def test_libraries_the_operator_names_do_log_what_the_defaults_keep_out(
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
    mcp_base: str,
) -> None:
    opened = {"httpx": "DEBUG", "openai": "DEBUG", "sqlalchemy.engine": "INFO"}
    with configured("DEBUG", opened) as capture:
        await run_turn_with_sentinels(client, alice, admin, openai_server, mcp_base)

    text = "\n".join(capture.lines)
    assert MESSAGE in text and URL_QUERY in text  # so the test above can fail


async def test_a_request_path_cannot_forge_or_hide_a_log_line(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    # The path is decoded before it is logged: "%0A" was a real newline, and "%00" a NUL.
    caplog.set_level(logging.INFO, logger="skillhive.access")
    forged = "x%0A2026-12-02 06:00:00,000 INFO skillhive.access DELETE /api/v1/users/1 204%00"
    await client.get(f"/api/v1/conversations/{forged}")
    (record,) = [r for r in caplog.records if r.name == "skillhive.access"]
    with configured("INFO"):
        line = logging.getLogger().handlers[0].format(record)
    assert "\n" not in line and "\x00" not in line
    assert "x\\n2026-12-02 06:00:00,000 INFO" in line and "204\\x00" in line


def test_a_traceback_still_follows_its_one_line_message() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord(
            "skillhive", logging.ERROR, __file__, 1, "a\r\nb", None, sys.exc_info()
        )
    with configured("INFO"):
        line = logging.getLogger().handlers[0].format(record)
    first, *rest = line.splitlines()
    assert first.endswith("ERROR skillhive a\\r\\nb") and rest[0].startswith("Traceback")
