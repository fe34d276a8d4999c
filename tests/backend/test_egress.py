"""Egress settings and the write-time check of `backend.egress`."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backend.config import Settings
from backend.egress import check_egress, url_refusal
from backend.errors import InvalidRequest
from chat_shell.net import EgressPolicy


def test_allow_and_deny_read_comma_separated_or_json_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SKILLHIVE_EGRESS_ALLOW", "127.0.0.1, 10.0.0.0/8,models.internal")
    monkeypatch.setenv("SKILLHIVE_EGRESS_DENY", '["10.9.0.0/16", "*.corp.example"]')
    monkeypatch.setenv("SKILLHIVE_ALLOWED_MODELS", "gpt-a,gpt-b")
    settings = Settings()
    assert settings.egress == EgressPolicy(
        allow=("127.0.0.1", "10.0.0.0/8", "models.internal"),
        deny=("10.9.0.0/16", "*.corp.example"),
    )
    assert settings.allowed_models == ["gpt-a", "gpt-b"]


def test_the_default_policy_is_the_strict_one() -> None:
    assert Settings().egress == EgressPolicy()


def test_a_malformed_entry_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLHIVE_EGRESS_DENY", "10.0.0.0/8,not a host!")
    with pytest.raises(ValidationError, match="neither a CIDR nor a host name"):
        Settings()


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://127.0.0.1/", True),
        ("ftp://example.com/", True),
        ("https://example.com/", False),
        ("http://localhost:9/", False),  # a name: resolved and checked on connect
        ("${{secrets.URL}}", False),
        ("https://${{secrets.HOST}}/mcp", False),
        ("http://127.0.0.1/${{user.id}}", True),  # the address is literal all the same
        ("http://${{user.name}}@127.0.0.1:8121/", True),  # so it is past a placeholder userinfo
        ("http://${{user.name}}:${{secrets.P}}@127.0.0.1/", True),
        ("http://${{user.name}}@${{secrets.HOST}}/", False),
        ("http://127.0.0.1:${{secrets.PORT}}/", False),  # the port may take the host along
        ("http://127.0.0.1.:8121/", True),
        ("HTTP://127.0.0.1/", True),
        ("http://a..example.com/", True),  # no resolver can look it up
        ("https://${{secrets.HOST}}..example.com/", False),  # checked once substituted
    ],
)
def test_url_refusal_decides_what_shows_on_write(url: str, refused: bool) -> None:
    assert (url_refusal(url, EgressPolicy()) is not None) is refused


@pytest.mark.parametrize(
    "url", ["${{secrets.URL}}", "https://${{secrets.HOST}}@127.0.0.1/", "http://127.0.0.1:${{x}}/"]
)
def test_a_url_used_as_written_defers_nothing_to_a_placeholder(url: str) -> None:
    assert url_refusal(url, EgressPolicy(), substituted=False) is not None


def test_check_egress_names_every_refused_entry_and_never_the_url() -> None:
    urls = {
        "a": "http://10.0.0.1/?token=t0ps3cret",
        "b": "https://ok.example/",
        "c": "http://[::1]/",
    }
    with pytest.raises(InvalidRequest) as info:
        check_egress(urls, EgressPolicy(), key="server")
    assert info.value.code == "egress_forbidden" and info.value.status_code == 422
    assert info.value.details["servers"] == ["a", "c"]
    assert "t0ps3cret" not in info.value.message + str(info.value.details)
