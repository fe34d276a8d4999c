"""The `skillhive` command line against a real SQLite database."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backend.cli import app
from backend.config import get_settings
from tests.support.cli import assert_one_error_line
from tests.support.ports import closed_port

runner = CliRunner()


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SKILLHIVE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SKILLHIVE_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield tmp_path
    # The CLI configures logging onto CliRunner's stream, which closes after each invoke.
    root.handlers[:], root.level = handlers, level
    get_settings.cache_clear()


def test_help_documents_every_command() -> None:
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0
    for command in ("serve", "migrate", "admin"):
        assert command in top.output
    admin = runner.invoke(app, ["admin", "--help"])
    assert "create-user" in admin.output and "create-token" in admin.output
    serve = runner.invoke(app, ["serve", "--help"])
    assert "--workers" in serve.output and "--port" in serve.output


def test_migrate_then_create_user_and_token(cli_env: Path) -> None:
    assert runner.invoke(app, ["migrate"]).exit_code == 0
    assert (cli_env / "skillhive.db").is_file()
    created = runner.invoke(app, ["admin", "create-user", "ada", "--admin"])
    assert created.exit_code == 0, created.output
    assert created.stdout.strip().startswith("shk_")  # only the token: TOKEN=$(...) works
    assert "created admin 'ada'" in created.stderr
    token = runner.invoke(app, ["admin", "create-token", "ada"])
    assert token.exit_code == 0 and token.output.strip().startswith("shk_")
    assert token.output.strip() != created.output.splitlines()[-1]


def test_cli_errors_are_clear(cli_env: Path) -> None:
    not_migrated = runner.invoke(app, ["admin", "create-user", "ada"])
    assert_one_error_line(not_migrated, "no schema yet", "skillhive migrate")
    runner.invoke(app, ["migrate"])
    unknown = runner.invoke(app, ["admin", "create-token", "nobody"])
    assert_one_error_line(unknown, "user_not_found")


def test_an_unreachable_database_is_one_line_naming_it_without_its_password(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = closed_port()
    monkeypatch.setenv("SKILLHIVE_DATABASE_URL", f"postgresql://u:pw-secret@127.0.0.1:{port}/db")
    get_settings.cache_clear()
    for command in (["migrate"], ["admin", "create-user", "ada"], ["skills", "sync"]):
        line = assert_one_error_line(
            runner.invoke(app, command), f"127.0.0.1:{port}", "SKILLHIVE_DATABASE_URL"
        )
        assert "pw-secret" not in line


def test_an_invalid_setting_is_one_line_naming_it(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLHIVE_PORT", "eighty")
    get_settings.cache_clear()
    assert_one_error_line(runner.invoke(app, ["admin", "create-user", "ada"]), "SKILLHIVE_PORT")
