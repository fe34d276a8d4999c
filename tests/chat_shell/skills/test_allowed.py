"""`allowed-tools` patterns: names, globs, server-qualified forms, and no list at all."""

from __future__ import annotations

import pytest

from chat_shell.skills.allowed import tool_allowed


@pytest.mark.parametrize(
    ("tool", "server", "patterns", "allowed"),
    [
        ("echo", "fx", None, True),
        ("echo", "fx", [], False),
        ("echo", "fx", ["echo"], True),
        ("echo", "fx", ["pid"], False),
        ("get_env", "fx", ["get_*"], True),
        ("echo", "fx", ["fx/echo"], True),
        ("echo", "fx", ["fx:*"], True),
        ("echo", "fx", ["mcp__fx__echo"], True),
        ("echo", "fx", ["other/echo"], False),
        ("fx_echo", "fx", ["fx/echo"], True),  # renamed on a clash, still its server's echo
        ("fx_echo", "fx", ["echo"], True),
        ("report", None, ["Bash(git add:*)", "report"], True),
        ("Bash", None, ["Bash(git add:*)"], True),
        ("report", None, ["fx/report"], False),
    ],
)
def test_a_tool_is_allowed_when_a_pattern_names_it(
    tool: str, server: str | None, patterns: list[str] | None, allowed: bool
) -> None:
    assert tool_allowed(tool, server, patterns) is allowed
