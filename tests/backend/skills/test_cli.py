"""`skillhive skills validate|push|sync` against the fixture skills and a live server."""

from __future__ import annotations

import os
import random
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backend.app import create_app
from backend.cli import app as cli
from backend.config import Settings, get_settings
from tests.support import zips
from tests.support.cli import assert_one_error_line
from tests.support.corpus import FIXTURE_SKILLS
from tests.support.live import live_server
from tests.support.ports import closed_port

runner = CliRunner()


def test_validate_reports_warnings_and_errors(tmp_path: Path) -> None:
    long_description = str(FIXTURE_SKILLS / "release-digest")
    ok = runner.invoke(cli, ["skills", "validate", long_description])
    assert ok.exit_code == 0, ok.output
    assert "warning: description_too_long" in ok.output
    strict = runner.invoke(cli, ["skills", "validate", "--strict", long_description])
    assert strict.exit_code == 1 and "strict_warnings" in strict.output
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: Broken!\ndescription: x\n---\n")
    bad = runner.invoke(cli, ["skills", "validate", str(broken)])
    assert bad.exit_code == 1 and "invalid_name" in bad.output


@pytest.fixture
def cli_database(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("SKILLHIVE_DATABASE_URL", settings.database_url or "")
    monkeypatch.setenv("SKILLHIVE_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    yield settings
    get_settings.cache_clear()


def test_push_creates_then_replaces_through_the_api(
    cli_database: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    created = runner.invoke(cli, ["admin", "create-user", "pusher"])
    token = created.output.strip().splitlines()[-1]
    skill = shutil.copytree(FIXTURE_SKILLS / "field-notes", tmp_path / "field-notes")
    (skill / "assets").mkdir()
    (skill / "assets" / "texture.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # progress bar
    with live_server(create_app(cli_database)) as url:
        monkeypatch.setenv("SKILLHIVE_URL", url)
        monkeypatch.setenv("SKILLHIVE_TOKEN", token)
        first = runner.invoke(cli, ["skills", "push", str(skill), "--namespace", "art"])
        assert first.exit_code == 0, first.output
        assert "created art/field-notes (v1)" in first.output
        second = runner.invoke(cli, ["skills", "push", str(skill), "--namespace", "art"])
        assert second.exit_code == 0, second.output
        assert "replaced art/field-notes (v2)" in second.output
        denied = runner.invoke(cli, ["skills", "push", str(skill), "--public"])
        assert denied.exit_code == 4 and "admin_required" in denied.output  # forbidden
        rolled = runner.invoke(
            cli, ["skills", "rollback", "field-notes", "1", "--namespace", "art"]
        )
        assert rolled.exit_code == 0, rolled.output
        assert "rolled back art/field-notes to v1 (resourceVersion 3)" in rolled.output
        history = runner.invoke(cli, ["skills", "history", "field-notes", "--namespace", "art"])
        assert history.exit_code == 0, history.output
        lines = history.output.strip().splitlines()
        assert [line.split()[0] for line in lines] == ["v3", "v2", "v1"]
        assert lines[0].endswith("rollback of v1") and lines[2].endswith("upload")
        unknown = runner.invoke(
            cli, ["skills", "rollback", "field-notes", "9", "--namespace", "art"]
        )
        assert unknown.exit_code == 3 and "version_not_found" in unknown.output  # not found
        missing_skill = runner.invoke(cli, ["skills", "history", "nope", "--namespace", "art"])
        assert missing_skill.exit_code == 3 and "skill_not_found" in missing_skill.output
    monkeypatch.delenv("SKILLHIVE_TOKEN")
    missing = runner.invoke(cli, ["skills", "push", str(skill)])
    assert missing.exit_code == 4 and "SKILLHIVE_TOKEN" in missing.output  # no token: auth


def test_sync_command_reports_each_builtin(cli_database: Settings) -> None:
    result = runner.invoke(cli, ["skills", "sync"])
    assert result.exit_code == 0, result.output
    assert "skillhive-skill-authoring: " in result.output


def test_push_refuses_an_archive_over_the_size_cap_before_sending_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: big\ndescription: A big skill.\n---\nHi.\n")
    (folder / "blob.bin").write_bytes(random.Random(0).randbytes(64 * 1024))
    listener = socket.create_server(("127.0.0.1", 0))  # accepts nothing: a send would hang
    listener.settimeout(0)
    monkeypatch.setenv("SKILLHIVE_URL", f"http://127.0.0.1:{listener.getsockname()[1]}")
    monkeypatch.setenv("SKILLHIVE_TOKEN", "shk_unused")
    monkeypatch.setenv("SKILLHIVE_MAX_ARCHIVE_BYTES", "32768")
    get_settings.cache_clear()
    try:
        result = runner.invoke(cli, ["skills", "push", str(folder)])
    finally:
        get_settings.cache_clear()
    with listener, pytest.raises(BlockingIOError):
        listener.accept()  # nobody ever connected
    assert result.exit_code == 1
    assert "archive_too_large" in result.output
    assert "the limit is 32768 (SKILLHIVE_MAX_ARCHIVE_BYTES)" in result.output


def _skill_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "SKILL.md").write_text(zips.skill_md("demo"))
    return folder


def test_push_to_a_closed_port_is_one_line_naming_the_url_and_skillhive_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = closed_port()
    monkeypatch.delenv("SKILLHIVE_URL", raising=False)
    monkeypatch.setenv("SKILLHIVE_PORT", str(port))  # the default URL follows it
    monkeypatch.setenv("SKILLHIVE_TOKEN", "shk_x")
    get_settings.cache_clear()
    result = runner.invoke(cli, ["skills", "push", str(_skill_folder(tmp_path))])
    get_settings.cache_clear()
    assert_one_error_line(
        result, f"http://127.0.0.1:{port}", "SKILLHIVE_URL", "refused", exit_code=5
    )


@contextmanager
def answering(status: int, body: bytes, content_type: str) -> Iterator[str]:
    """A loopback HTTP server answering every request with one canned response."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

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
    ("status", "body", "content_type", "needles", "exit_code"),
    [
        (
            401,
            b'{"error": {"code": "invalid_token", "message": "unknown token", "details": {}}}',
            "application/json",
            ["401 invalid_token: unknown token", "SKILLHIVE_TOKEN"],
            4,
        ),
        (502, b"<html>bad gateway</html>", "text/html", ["502 Bad Gateway from http://"], 1),
    ],
)
def test_push_reports_an_http_error_by_status_code_and_message(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    body: bytes,
    content_type: str,
    needles: list[str],
    exit_code: int,
) -> None:
    monkeypatch.setenv("SKILLHIVE_TOKEN", "shk_x")
    with answering(status, body, content_type) as url:
        monkeypatch.setenv("SKILLHIVE_URL", url)
        result = runner.invoke(cli, ["skills", "push", str(_skill_folder(tmp_path))])
    assert_one_error_line(result, *needles, exit_code=exit_code)
