"""`skillhive skills validate|push|sync` against the fixture skills and a live server."""

from __future__ import annotations

import os
import shutil
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
        assert unknown.exit_code == 1 and "version_not_found" in unknown.output
        missing_skill = runner.invoke(cli, ["skills", "history", "nope", "--namespace", "art"])
        assert missing_skill.exit_code == 1 and "skill_not_found" in missing_skill.output
    monkeypatch.delenv("SKILLHIVE_TOKEN")
    missing = runner.invoke(cli, ["skills", "push", str(skill)])
    assert missing.exit_code == 1 and "SKILLHIVE_TOKEN" in missing.output


def test_sync_command_reports_each_builtin(cli_database: Settings) -> None:
    result = runner.invoke(cli, ["skills", "sync"])
    assert result.exit_code == 0, result.output
    assert "skillhive-skill-authoring: " in result.output
