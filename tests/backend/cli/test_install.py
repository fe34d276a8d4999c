"""Client commands whose routes are built on other branches, tested against loopback stubs that
answer as those routes do: `skillhive skills install CONVERSATION ARTIFACT` (the request it
sends, each answer's exit code) and `chat`'s slash-command completion (`.../commands`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from backend.client.api import connect
from backend.client.chat import completer, slash_commands
from backend.client.config import ClientConfig
from tests.support.cli import assert_one_error_line, invoke

SKILL = {
    "apiVersion": "skillhive.io/v1",
    "kind": "Skill",
    "metadata": {"name": "csv-tools", "namespace": "dev", "resourceVersion": 1},
    "spec": {"description": "CSV helpers."},
    "status": {"warnings": [{"code": "unknown_field", "message": "non-standard key 'x'"}]},
}


@contextmanager
def stub(status: int, body: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback server answering every POST with `status` and `body`; records requests."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append(
                {"path": self.path, "auth": self.headers["Authorization"], "json": json.loads(data)}
            )
            answer = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("SKILLHIVE_TOKEN", "shk_stub")
    monkeypatch.setenv("SKILLHIVE_NAMESPACE", "dev")


def test_install_posts_the_conversation_and_artifact_and_reports_the_skill(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with stub(201, SKILL) as (url, seen):
        monkeypatch.setenv("SKILLHIVE_URL", url)
        result = invoke("skills", "install", "conv-1", "outputs/csv-tools.zip")
    assert result.exit_code == 0, result.output
    assert seen == [
        {
            "path": "/api/v1/namespaces/dev/skills/install",
            "auth": "Bearer shk_stub",
            "json": {"conversation": "conv-1", "artifact": "outputs/csv-tools.zip"},
        }
    ]
    assert "warning: unknown_field: non-standard key 'x'" in result.output
    assert "installed dev/csv-tools (v1) from conv-1/outputs/csv-tools.zip" in result.output


@pytest.mark.parametrize(
    ("status", "code", "exit_code"),
    [(404, "artifact_not_found", 3), (422, "invalid_name", 1), (403, "admin_required", 4)],
)
def test_install_errors_are_one_line_with_the_api_code_and_exit_code(
    monkeypatch: pytest.MonkeyPatch, status: int, code: str, exit_code: int
) -> None:
    error = {"error": {"code": code, "message": "refused", "details": {}}}
    with stub(status, error) as (url, _):
        monkeypatch.setenv("SKILLHIVE_URL", url)
        result = invoke("skills", "install", "conv-1", "a.zip", "-n", "other")
    assert_one_error_line(result, f"{status} {code}: refused", exit_code=exit_code)


@contextmanager
def answering_get(status: int, body: Any) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, {"items": [{"name": "reset"}, {"name": "/help"}]}, ["/help", "/reset"]),
        (404, {"error": {"code": "not_found", "message": "no route", "details": {}}}, []),
        (500, {"error": {"code": "internal_error", "message": "x", "details": {}}}, []),
    ],
)
def test_chat_offers_the_ghosts_slash_commands_only_when_the_route_answers(
    status: int, body: Any, expected: list[str]
) -> None:
    """The `/commands` route comes from another branch: its absence (404) is silent."""
    with answering_get(status, body) as url:
        cfg = ClientConfig(url=url, token="shk_stub", namespace="dev")
        with connect(cfg=cfg) as api:
            commands = slash_commands(api, "dev", "helper")
    assert commands == expected
    complete = completer(commands)
    assert [complete("/", i) for i in range(len(expected) + 1)] == [*expected, None]
    assert complete("/r", 0) == ("/reset" if expected else None)
    assert complete("hello", 0) is None
