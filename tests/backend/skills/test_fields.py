"""Frontmatter fields: types, extensions, unknown keys and the name rules."""

from __future__ import annotations

from typing import Any

import pytest

from backend.skills.errors import PackageError
from backend.skills.package import SkillPackage, read_package
from tests.support.zipcraft import make_zip, skill_md, skill_zip

DESCRIPTION = "description: A demo skill."


def read(frontmatter: str, **kwargs: Any) -> SkillPackage:
    return read_package(skill_zip(frontmatter), **kwargs)


def refused(frontmatter: str, folder: str = "demo") -> PackageError:
    with pytest.raises(PackageError) as info:
        read_package(make_zip({f"{folder}/SKILL.md": skill_md(frontmatter)}))
    assert info.value.status_code == 422
    assert info.value.details["entry"] == f"{folder}/SKILL.md"
    return info.value


def codes(package: SkillPackage) -> list[str]:
    return [w.code for w in package.warnings]


def test_standard_fields_are_read() -> None:
    spec = read(
        "name: demo\ndescription: '  Does things.  '\nlicense: MIT\ncompatibility: Python 3.11\n"
        "allowed-tools: Bash(git add:*) Read  Write\nmetadata:\n  short-description: Demo\n"
    ).spec
    assert spec.description == "Does things."
    assert (spec.license, spec.compatibility) == ("MIT", "Python 3.11")
    assert spec.allowed_tools == ["Bash(git add:*)", "Read", "Write"]
    assert spec.metadata == {"short-description": "Demo"}


def test_allowed_tools_may_be_a_list() -> None:
    assert read(f"name: demo\n{DESCRIPTION}\nallowed-tools: [Read, Grep]").spec.allowed_tools == [
        "Read",
        "Grep",
    ]


def test_wegent_extension_fields_are_read_and_mcp_placeholders_kept_verbatim() -> None:
    spec = read(
        f"""{DESCRIPTION}
displayName: 演示
version: 1.10
author: Team
tags: [a, b]
bindShells: [Chat]
config: {{timeout: 30, nested: {{list: [1, 2]}}}}
tools:
  - name: render
    provider: demo
    config: {{timeout: 5}}
provider: {{module: provider, class: DemoProvider}}
mcpServers:
  remote:
    type: streamable-http
    url: "${{{{backend_url}}}}/mcp/sse"
    headers: {{Authorization: "Bearer ${{{{task_token}}}}"}}
    timeout: 300
  local: {{transport: stdio, command: npx, args: [-y, server, 8080], env: {{A: b}}}}
"""
    ).spec
    assert (spec.display_name, spec.version, spec.author) == ("演示", "1.10", "Team")
    assert (spec.tags, spec.bind_shells) == (["a", "b"], ["Chat"])
    assert spec.config == {"timeout": 30, "nested": {"list": [1, 2]}}
    assert spec.tools[0].model_dump() == {
        "name": "render",
        "provider": "demo",
        "config": {"timeout": 5},
    }
    assert spec.provider is not None and spec.provider.model_dump() == {
        "module": "provider",
        "class": "DemoProvider",
    }
    remote = spec.mcp_servers["remote"]
    assert remote.url == "${{backend_url}}/mcp/sse"
    assert remote.headers == {"Authorization": "Bearer ${{task_token}}"}
    assert remote.timeout == 300
    local = spec.mcp_servers["local"].model_dump(exclude_none=True)
    assert local == {
        "transport": "stdio",
        "command": "npx",
        "args": ["-y", "server", "8080"],
        "env": {"A": "b"},
    }


def test_a_placeholder_no_turn_fills_is_a_warning_and_a_malformed_one_refuses() -> None:
    # ${{backend_url}} is another platform's: its server never connects here, which the
    # upload said nothing of
    servers = "mcpServers: {remote: {url: '${{backend_url}}/mcp/sse'}, mine: {url: '%s'}}"
    package = read(f"name: demo\n{DESCRIPTION}\n" + servers % "https://x.example/${{user.id}}")
    assert codes(package) == ["unknown_placeholder"]
    assert "'remote'" in package.warnings[0].message
    assert "${{backend_url}}" in package.warnings[0].message
    with pytest.raises(PackageError) as strict:
        read(f"name: demo\n{DESCRIPTION}\n" + servers % "https://x.example/", strict=True)
    assert strict.value.code == "strict_warnings"
    err = refused(f"name: demo\n{DESCRIPTION}\n" + servers % "https://x.example/${{user.id")
    assert (err.code, err.details["server"], err.details["field"]) == (
        "mcp_placeholder_invalid",
        "mine",
        "url",
    )
    # a config no turn can start, or a secret no name can match, never connects either
    unusable = "mcpServers: {s: {url: 'https://x.example/', env: {P: 1}}}"
    assert codes(read(f"name: demo\n{DESCRIPTION}\n{unusable}")) == ["mcp_server_unusable"]
    secret = "mcpServers: {s: {url: 'https://x.example/${{secrets.a-b}}'}}"
    package = read(f"name: demo\n{DESCRIPTION}\n{secret}")
    assert codes(package) == ["unknown_placeholder"]
    assert "names no possible secret" in package.warnings[0].message


def test_unknown_keys_are_kept_in_extra_with_one_warning_each() -> None:
    package = read(
        f"name: demo\n{DESCRIPTION}\nargument-hint: '[file]'\nuser-invocable: true\nprompt: x"
    )
    assert package.spec.extra == {"argument-hint": "[file]", "user-invocable": True, "prompt": "x"}
    assert codes(package) == ["unknown_field"] * 3
    assert "argument-hint" in package.warnings[0].message
    assert package.spec.prompt == "Do the thing."  # a `prompt` key does not replace the body


def test_empty_values_count_as_absent() -> None:
    spec = read(f"name: demo\n{DESCRIPTION}\nlicense:\ntags:\nauthor: ''").spec
    assert (spec.license, spec.tags, spec.author) == (None, [], None)


@pytest.mark.parametrize(
    ("frontmatter", "code", "field"),
    [
        ("name: demo", "missing_field", "description"),
        ("name: demo\ndescription: '   '", "missing_field", "description"),
        ("name: demo\ndescription: [a, b]", "invalid_field", "description"),
        (f"name: demo\n{DESCRIPTION}\ntags: one-tag", "invalid_field", "tags"),
        (f"name: demo\n{DESCRIPTION}\ntags: [ok, {{no: dict}}]", "invalid_field", "tags[1]"),
        (f"name: demo\n{DESCRIPTION}\nbindShells: Chat", "invalid_field", "bindShells"),
        (f"name: demo\n{DESCRIPTION}\nconfig: [1]", "invalid_field", "config"),
        (f"name: demo\n{DESCRIPTION}\nprovider: {{module: m}}", "missing_field", "provider.class"),
        (f"name: demo\n{DESCRIPTION}\nprovider: m.Class", "invalid_field", "provider"),
        (f"name: demo\n{DESCRIPTION}\ntools: [render]", "invalid_field", "tools[0]"),
        (f"name: demo\n{DESCRIPTION}\ntools: [{{provider: p}}]", "missing_field", "tools[0].name"),
        (
            f"name: demo\n{DESCRIPTION}\ntools: [{{name: t, bogus: 1}}]",
            "invalid_field",
            "tools[0].bogus",
        ),
        (
            f"name: demo\n{DESCRIPTION}\nmcpServers: {{s: {{type: sse}}}}",
            "invalid_field",
            "mcpServers.s",
        ),
        (f"name: demo\n{DESCRIPTION}\nmcpServers: [a]", "invalid_field", "mcpServers"),
        (
            f"name: demo\n{DESCRIPTION}\nmcpServers: {{s: {{url: u, timeout: soon}}}}",
            "invalid_field",
            "mcpServers.s.timeout",
        ),
        (
            f"name: demo\n{DESCRIPTION}\nmcpServers: {{s: {{url: u, timeout: inf}}}}",
            "invalid_field",
            "mcpServers.s.timeout",
        ),
        (
            f"name: demo\n{DESCRIPTION}\nmetadata: {{k: {{nested: 1}}}}",
            "invalid_field",
            "metadata.k",
        ),
        (f"name: demo\n{DESCRIPTION}\nmetadata: text", "invalid_field", "metadata"),
        (f"name: demo\n{DESCRIPTION}\nallowed-tools: {{a: b}}", "invalid_field", "allowed-tools"),
        (f"name: demo\n{DESCRIPTION}\nlicense: [MIT]", "invalid_field", "license"),
    ],
)
def test_type_errors_name_the_field(frontmatter: str, code: str, field: str) -> None:
    err = refused(frontmatter)
    assert (err.code, err.details["field"]) == (code, field)
    assert field in err.message


def test_scalars_in_text_fields_become_text() -> None:
    spec = read(
        f"name: demo\n{DESCRIPTION}\ntags: [1, 2.5, true]\nmetadata: {{n: 3, flag: no}}"
    ).spec
    assert spec.tags == ["1", "2.5", "true"]
    assert spec.metadata == {"n": "3", "flag": "false"}


def test_an_explicit_name_equal_to_the_folder_draws_no_warning() -> None:
    package = read(f"name: demo\n{DESCRIPTION}")
    assert (package.name, codes(package)) == ("demo", [])


def test_a_name_other_than_the_folder_is_kept_with_a_warning() -> None:
    package = read(f"name: other\n{DESCRIPTION}")
    assert (package.name, codes(package)) == ("other", ["name_mismatch"])


@pytest.mark.parametrize(
    ("folder", "derived"), [("demo", "demo"), ("Wiki_Submit", "wiki-submit"), ("x_y_z", "x-y-z")]
)
def test_a_missing_name_is_derived_from_the_folder(folder: str, derived: str) -> None:
    package = read_package(make_zip({f"{folder}/SKILL.md": skill_md(DESCRIPTION)}))
    assert (package.name, codes(package)) == (derived, ["name_derived"])
    assert folder in package.warnings[0].message


def test_a_root_level_skill_without_a_name_uses_the_fallback_name() -> None:
    data = make_zip({"SKILL.md": skill_md(DESCRIPTION)})
    assert read_package(data, fallback_name="my_upload").name == "my-upload"
    with pytest.raises(PackageError) as info:
        read_package(data)
    assert (info.value.code, info.value.details["field"]) == ("missing_field", "name")


def test_a_root_level_skill_compares_its_name_with_no_folder() -> None:
    package = read_package(
        make_zip({"SKILL.md": skill_md(f"name: demo\n{DESCRIPTION}")}), fallback_name="x"
    )
    assert (package.name, codes(package)) == ("demo", [])


def test_a_snake_case_name_is_normalized_with_a_warning() -> None:
    package = read_package(
        make_zip(
            {
                "conversation_to_prompt/SKILL.md": skill_md(
                    f"name: conversation_to_prompt\n{DESCRIPTION}"
                )
            }
        )
    )
    assert package.name == "conversation-to-prompt"
    assert codes(package) == ["name_normalized", "name_mismatch"]


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("My-Skill", "must be lowercase"),
        ("a--b", "must not contain consecutive hyphens"),
        ("-demo", "must not start or end with '-'"),
        ("demo-", "must not start or end with '-'"),
        ("a" * 65, "must be at most 64 characters (it has 65)"),
        ("my skill", "may contain only a-z, 0-9 and '-' (found ' ')"),
        ("skill.v2", "may contain only a-z, 0-9 and '-' (found '.')"),
        ("café", "may contain only a-z, 0-9 and '-' (found 'é')"),
        ("Bad_Name", "must be lowercase"),
    ],
)
def test_an_invalid_explicit_name_says_which_rule_failed(name: str, rule: str) -> None:
    err = refused(f"name: '{name}'\n{DESCRIPTION}")
    assert (err.code, err.details["rule"]) == ("invalid_name", rule)
    assert rule in err.message


def test_a_name_that_is_not_text_is_invalid() -> None:
    err = refused(f"name: [demo]\n{DESCRIPTION}")
    assert err.code == "invalid_name"
    assert "must be a string" in err.message


def test_a_name_written_as_a_number_is_taken_as_written() -> None:
    package = read_package(make_zip({"007/SKILL.md": skill_md(f"name: 007\n{DESCRIPTION}")}))
    assert package.name == "007"


def test_a_folder_that_cannot_become_a_name_is_invalid_name() -> None:
    err = refused(DESCRIPTION, folder="My Skill!")
    assert err.code == "invalid_name"
    assert "derived from folder 'My Skill!'" in err.message
