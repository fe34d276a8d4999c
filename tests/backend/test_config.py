"""Settings: prefix, unknown variables, documentation of every field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI
from pydantic import ValidationError

from backend.chat.builder import model_settings
from backend.config import NON_SERVER_VARIABLES, Settings, unknown_env_variables
from backend.crd.ghost import GhostModel
from chat_shell.models import create_chat_model

ROOT = Path(__file__).resolve().parents[2]


def test_unknown_skillhive_variables_are_reported() -> None:
    env = {
        "SKILLHIVE_PORT": "9000",
        "SKILLHIVE_DATABSE_URL": "typo",
        "SKILLHIVE_TOKEN": "client-side",
        "HOME": "/root",
    }
    assert unknown_env_variables(env) == ["SKILLHIVE_DATABSE_URL"]


def test_settings_read_the_prefixed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLHIVE_PORT", "9123")
    monkeypatch.setenv("SKILLHIVE_MAX_ARCHIVE_ENTRIES", "7")
    settings = Settings()
    assert settings.port == 9123
    assert settings.max_archive_entries == 7


def test_default_database_is_a_sqlite_file_under_data_dir(tmp_path: Path) -> None:
    url = Settings(data_dir=tmp_path, database_url=None).effective_database_url
    assert url == f"sqlite+aiosqlite:///{tmp_path.resolve()}/skillhive.db"


def test_docs_list_exactly_the_settings() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"`(SKILLHIVE_[A-Z0-9_]+)`", doc)) - NON_SERVER_VARIABLES
    assert documented == {f"SKILLHIVE_{name.upper()}" for name in Settings.model_fields}


OPTIONAL_FIELDS = [name for name, field in Settings.model_fields.items() if field.default is None]


@pytest.mark.parametrize("name", OPTIONAL_FIELDS)
def test_an_empty_optional_setting_counts_as_unset(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(f"SKILLHIVE_{name.upper()}", "")
    assert getattr(Settings(), name) is None


def test_empty_openai_variables_leave_the_client_on_its_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What compose's `${SKILLHIVE_OPENAI_BASE_URL:-}` used to pass: the client got base URL ''.
    monkeypatch.setenv("SKILLHIVE_OPENAI_BASE_URL", "")
    monkeypatch.setenv("SKILLHIVE_OPENAI_API_KEY", " ")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("SKILLHIVE_MODEL", "gpt-test")  # the server's model: allowed on its key
    model = model_settings(GhostModel(name="gpt-test"), Settings(), {})
    assert model.base_url is None and model.api_key is None
    client = create_chat_model(model)
    assert isinstance(client, ChatOpenAI) and client.openai_api_base is None


def test_an_empty_required_setting_is_still_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLHIVE_PORT", "")
    with pytest.raises(ValidationError, match="port"):
        Settings()
