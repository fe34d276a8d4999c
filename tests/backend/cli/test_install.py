"""`skillhive skills install CONVERSATION ARTIFACT`. The install route is built on another
branch: the command is tested against a loopback stub that answers as that route does (the
request it receives is checked, and each answer's exit code)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.backend.cli.conftest import invoke
from tests.backend.test_cli import assert_one_error_line

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
