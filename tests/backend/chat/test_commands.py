"""Slash commands expand without a database: arguments, escapes and unknown names."""

from __future__ import annotations

import pytest

from backend.chat.commands import (
    Command,
    UnknownCommandError,
    expand,
    invoked_name,
    substitute,
    unescape,
)

FORECAST = Command(
    name="forecast",
    description="",
    argument_hint="<quarter> <region>",
    source="plugin:sales",
    prompt="Forecast quarter $1 for region $2.",
    skills=("sales/call-prep",),
)
SKILL = Command(
    name="sales/call-prep",
    description="",
    argument_hint=None,
    source="skill",
    skills=("sales/call-prep",),
)
COMMANDS = {"forecast": FORECAST, "sales:forecast": FORECAST, "sales/call-prep": SKILL}


def test_positional_arguments_take_shell_words() -> None:
    assert substitute("Quarter $1, region $2.", 'Q3 "North America"') == (
        "Quarter Q3, region North America."
    )


def test_arguments_fill_dollar_arguments_verbatim() -> None:
    assert substitute("Notes: $ARGUMENTS", "a  b 'c") == "Notes: a  b 'c"


def test_arguments_are_appended_when_the_text_takes_none() -> None:
    assert substitute("Do it.", "now") == "Do it.\n\nARGUMENTS: now"
    assert substitute("Do it.", "") == "Do it."


def test_a_missing_positional_argument_is_empty() -> None:
    assert substitute("[$1][$2]", "one") == "[one][]"


def test_a_plugin_command_expands_into_the_request_with_its_skills() -> None:
    invocation = expand("/forecast Q3 EMEA", COMMANDS)
    assert invocation is not None
    assert invocation.request == "Forecast quarter Q3 for region EMEA."
    assert invocation.skills == ("sales/call-prep",)
    qualified = expand("/sales:forecast Q1 APAC", COMMANDS)
    assert qualified is not None and qualified.request == "Forecast quarter Q1 for region APAC."


def test_a_skill_command_passes_its_arguments_on() -> None:
    invocation = expand("/sales/call-prep meeting with ACME", COMMANDS)
    assert invocation is not None
    assert invocation.request == "meeting with ACME" and invocation.skills == ("sales/call-prep",)
    bare = expand("/sales/call-prep", COMMANDS)
    assert bare is not None and bare.request == "Use the sales/call-prep skill."


def test_an_unknown_command_is_refused_naming_what_is_offered() -> None:
    with pytest.raises(UnknownCommandError) as caught:
        expand("/nope x", COMMANDS)
    assert caught.value.code == "unknown_command"
    assert caught.value.details["offered"] == sorted(COMMANDS)


def test_ordinary_messages_and_escapes_are_not_commands() -> None:
    for message in ("hello /forecast", "//forecast Q3", "/ spaced", "/Upper", "/a/b/c"):
        assert expand(message, COMMANDS) is None
        assert invoked_name(message) is None
    assert unescape("//forecast Q3") == "/forecast Q3"
    assert unescape("plain") == "plain"
