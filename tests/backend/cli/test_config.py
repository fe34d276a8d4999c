"""Shared CLI behaviour: the config file of `skillhive login`, the environment over it, exit
codes a script can rely on, one error line, shell completion."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from backend.client.config import config_path
from tests.support.cli import Server, Terminal, assert_one_error_line, invoke, ok
from tests.support.ports import closed_port

sqlite_only = pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)


@sqlite_only
def test_login_checks_the_token_and_writes_an_owner_only_config_the_env_overrides(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    piped = f"{server.token}\n"  # `skillhive login < file`: the token stays out of argv
    out = ok("login", "--url", server.url, "--namespace", "dev", input=piped)
    path = tmp_path / "xdg" / "skillhive" / "config.yaml"
    assert config_path() == path and f"as ada (namespace dev); saved {path}" in out
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text()) == {
        "url": server.url,
        "token": server.token,
        "namespace": "dev",
    }
    ok("apply", "-f", "-", input="kind: Ghost\nmetadata: {name: g}\nspec: {systemPrompt: Hi.}\n")
    monkeypatch.delenv("SKILLHIVE_URL")
    monkeypatch.delenv("SKILLHIVE_TOKEN")
    # From the file alone: its URL, token and namespace (`dev`, where the Ghost went).
    assert ok("get", "ghosts").splitlines()[1].split()[:2] == ["dev", "g"]
    monkeypatch.setenv("SKILLHIVE_NAMESPACE", "other")
    assert "No resources found." in invoke("get", "ghosts").output
    monkeypatch.setenv("SKILLHIVE_TOKEN", "shk_not-a-token")
    assert_one_error_line(invoke("get", "ghosts"), "401 invalid_token", "login", exit_code=4)
    refused = invoke("login", "--url", server.url, "--token", "shk_wrong")
    assert_one_error_line(refused, "401 invalid_token", exit_code=4)
    assert yaml.safe_load(path.read_text())["token"] == server.token  # unchanged
    monkeypatch.setenv("SKILLHIVE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("SKILLHIVE_TOKEN", server.token)
    assert_one_error_line(invoke("get", "ghosts"), "cannot reach", exit_code=5)


def test_without_a_token_anywhere_the_exit_code_is_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("SKILLHIVE_TOKEN", raising=False)
    for args in (["get", "skills"], ["chat", "dev/g", "-m", "hi"], ["delete", "ghost", "g"]):
        assert_one_error_line(invoke(*args), "no API token", "skillhive login", exit_code=4)


def test_login_without_a_token_anywhere_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert_one_error_line(invoke("login", "--url", "http://x", input=""), "--token", exit_code=2)
    assert not (tmp_path / "skillhive").exists()


def test_a_broken_config_file_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "skillhive").mkdir()
    (tmp_path / "skillhive" / "config.yaml").write_text("- just\n- a list\n")
    assert_one_error_line(invoke("get", "skills"), "must be a YAML mapping", exit_code=1)


def test_bad_input_files_are_one_error_line_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLHIVE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("SKILLHIVE_TOKEN", "shk_x")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Ghost\nmetadata: [unclosed\n")
    assert_one_error_line(invoke("apply", "-f", str(bad)), "not valid YAML", exit_code=1)
    other = tmp_path / "other.yaml"
    other.write_text("kind: Deployment\nmetadata: {name: x}\n")
    assert_one_error_line(invoke("apply", "-f", str(other)), "unsupported kind", exit_code=1)
    dangling = tmp_path / "skill.yaml"
    dangling.write_text("kind: Skill\nmetadata: {name: x}\nspec: {path: nowhere}\n")
    assert_one_error_line(invoke("apply", "-f", str(dangling)), "not a skill folder", exit_code=1)
    missing = invoke("apply", "-f", str(tmp_path / "absent.yaml"))
    assert_one_error_line(missing, "no such file or folder", exit_code=1)


def test_shell_completion_completes_commands_and_kinds() -> None:
    env = {"_SKILLHIVE_COMPLETE": "complete_bash", "COMP_CWORD": "2"}
    result = invoke_env({**env, "COMP_WORDS": "skillhive get gh"})
    assert result.splitlines() == ["ghosts"]
    commands = invoke_env({**env, "COMP_WORDS": "skillhive de", "COMP_CWORD": "1"})
    assert set(commands.split()) == {"delete", "describe"}


def invoke_env(env: dict[str, str]) -> str:
    """The installed `skillhive` script (completion keys on the program's name)."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "skillhive")],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@sqlite_only
def test_login_prompts_on_a_terminal_without_echoing_the_token(
    server: Server, terminal: Any, tmp_path: Path
) -> None:
    env = server.env(XDG_CONFIG_HOME=str(tmp_path / "tty-xdg"))
    del env["SKILLHIVE_TOKEN"]
    term: Terminal = terminal(["login"], env)
    term.read_until("API URL")
    term.type(f"{server.url}\r")
    term.read_until("API token: ")  # getpass writes the space once echo is off
    term.type(f"{server.token}\r")
    shown = term.read_until("saved")
    assert term.process.wait(30) == 0
    assert server.token not in shown  # hidden input
    saved = yaml.safe_load((tmp_path / "tty-xdg" / "skillhive" / "config.yaml").read_text())
    assert saved == {"url": server.url, "token": server.token, "namespace": "default"}
