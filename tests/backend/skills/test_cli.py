"""`skillhive skills validate|push|sync` against the fixture skills and a live server."""

from __future__ import annotations

import os
import random
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backend.app import create_app
from backend.cli import app as cli
from backend.config import Settings, get_settings
from tests.support.corpus import FIXTURE_SKILLS
from tests.support.live import live_server

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
        assert denied.exit_code == 1 and "admin_required" in denied.output
    monkeypatch.delenv("SKILLHIVE_TOKEN")
    missing = runner.invoke(cli, ["skills", "push", str(skill)])
    assert missing.exit_code == 1 and "SKILLHIVE_TOKEN" in missing.output


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
