"""SKILL.md splitting and the hostile-YAML bounds of its frontmatter."""

from __future__ import annotations

import json

import pytest

from backend.skills.errors import PackageError
from backend.skills.frontmatter import EXPANSION_FACTOR, SkillMarkdown, parse_skill_md
from backend.skills.package import read_package
from backend.skills.safe_yaml import MAX_DEPTH
from tests.support.zipcraft import make_zip

CAP = 64 * 1024


def parse(text: str | bytes) -> SkillMarkdown:
    data = text.encode() if isinstance(text, str) else text
    return parse_skill_md(data, entry="demo/SKILL.md", max_frontmatter_bytes=CAP)


def refused(text: str | bytes) -> PackageError:
    with pytest.raises(PackageError) as info:
        parse(text)
    assert info.value.status_code == 422
    assert info.value.details["entry"] == "demo/SKILL.md"
    return info.value


def test_frontmatter_and_body_are_split_at_the_delimiter_lines() -> None:
    md = parse("---\nname: demo\ndescription: d\n---\n\n# Title\n\nBody.\n")
    assert md.frontmatter == {"name": "demo", "description": "d"}
    assert md.body == "# Title\n\nBody."


@pytest.mark.parametrize(
    "text",
    [
        b"\xef\xbb\xbf---\nname: demo\n---\nBody\n",  # UTF-8 BOM
        b"---\r\nname: demo\r\n---\r\nBody\r\n",  # CRLF
        b"---  \nname: demo\n--- \t\nBody\n",  # trailing blanks after the delimiters
        b"---\nname: demo\n---\nBody",  # no final newline
    ],
    ids=["bom", "crlf", "trailing-spaces", "no-final-newline"],
)
def test_tolerated_variations_parse_the_same(text: bytes) -> None:
    md = parse(text)
    assert (md.frontmatter, md.body) == ({"name": "demo"}, "Body")


def test_a_file_that_ends_right_after_the_closing_delimiter_has_an_empty_body() -> None:
    assert parse("---\nname: demo\n---").body == ""


def test_dashes_inside_a_value_are_not_a_delimiter() -> None:
    md = parse(
        "---\ndescription: before --- after\nnotes: |\n  ---\n  kept\n---\nBody\n---\nmore\n"
    )
    assert md.frontmatter == {"description": "before --- after", "notes": "---\nkept\n"}
    assert md.body == "Body\n---\nmore"  # a Markdown rule in the body stays in the body


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: demo\n", "must start with a '---' line"),
        ("\n---\nname: demo\n---\n", "must start with a '---' line"),
        ("---\nname: demo\n", "not closed"),
        ("---\nname: demo\n--- # done\n", "not closed"),
    ],
)
def test_missing_delimiters_are_invalid_frontmatter(text: str, message: str) -> None:
    err = refused(text)
    assert err.code == "invalid_frontmatter"
    assert message in err.message


@pytest.mark.parametrize(
    ("yaml_text", "kind"),
    [("- a\n- b", "a list"), ("just text", "a str"), ("", "empty"), ("42", "a int")],
)
def test_yaml_that_is_not_a_mapping_is_invalid_frontmatter(yaml_text: str, kind: str) -> None:
    err = refused(f"---\n{yaml_text}\n---\nBody\n")
    assert err.code == "invalid_frontmatter"
    assert kind in err.message


def test_a_yaml_syntax_error_reports_its_line_in_skill_md() -> None:
    err = refused("---\nname: demo\ndescription: ok\nauthor: a: b\n---\n")
    assert err.code == "yaml_error"
    assert err.details["line"] == 4  # counted from the opening '---', line 1 of SKILL.md
    assert "line 4" in err.message


def test_a_tab_indentation_error_reports_its_line() -> None:
    err = refused("---\nname: demo\nconfig:\n\tkey: 1\n---\n")
    assert (err.code, err.details["line"]) == ("yaml_error", 4)


@pytest.mark.parametrize(
    "value",
    ["!!python/object/apply:os.system ['true']", "!!binary aGVsbG8=", "!!set {a, b}", "!custom x"],
)
def test_tags_beyond_plain_json_types_are_refused(value: str) -> None:
    err = refused(f"---\nname: demo\nconfig: {value}\n---\n")
    assert (err.code, err.details["line"]) == ("yaml_error", 3)


def test_values_become_json_safe() -> None:
    md = parse(
        "---\ncreated: 2024-01-02\nratio: .nan\nbig: .inf\nkeys: {1: a, true: b, 1.0: c}\n---\n"
    )
    assert md.frontmatter == {
        "created": "2024-01-02",  # not a datetime.date
        "ratio": ".nan",
        "big": ".inf",
        "keys": {"1": "a", "true": "b", "1.0": "c"},  # no collision: 1 == True == 1.0
    }
    json.dumps(md.frontmatter, allow_nan=False)


@pytest.mark.parametrize("digits", ["9" * 5000, "0x" + "f" * 5000, "1" * 101])
def test_an_integer_too_long_to_be_a_setting_is_a_yaml_error(digits: str) -> None:
    # Python refuses to parse 4,300 decimal digits (a ValueError, once a 500), and a hex one
    # that long is no setting either.
    err = refused(f"---\nname: demo\nmetadata:\n  a: {digits}\n---\n")
    assert (err.code, err.details["line"]) == ("yaml_error", 4)
    assert "integer of more than 100 characters" in err.message


def test_integers_of_ordinary_sizes_still_load() -> None:
    md = parse(f"---\nname: demo\nsmall: 0x1f\nlong: {'9' * 100}\n---\n")
    assert md.frontmatter["small"] == 31 and md.frontmatter["long"] == int("9" * 100)


def test_a_key_written_twice_is_a_yaml_error() -> None:
    # Parsers differ on which one counts: `name: s` then `name: t` named the skill `t` here.
    err = refused("---\nname: s\ndescription: d\nname: t\n---\n")
    assert (err.code, err.details["line"]) == ("yaml_error", 4)
    assert "found the key 'name' twice" in err.message
    nested = refused("---\nname: s\nmetadata:\n  a: 1\n  a: 2\n---\n")
    assert (nested.code, nested.details["line"]) == ("yaml_error", 5)


def test_a_key_a_merge_brings_in_may_be_written_again() -> None:
    md = parse("---\nname: demo\nbase: &b {a: 1, c: 3}\nmetadata:\n  <<: *b\n  a: 2\n---\n")
    assert md.frontmatter["metadata"] == {"a": 2, "c": 3}


def test_a_non_scalar_key_is_a_yaml_error() -> None:
    err = refused("---\nname: demo\nconfig:\n  ? [a, b]\n  : c\n---\n")
    assert (err.code, err.details["line"]) == ("yaml_error", 4)


def test_top_level_numbers_and_booleans_are_also_kept_as_written() -> None:
    md = parse("---\nversion: 1.10\nenabled: yes\ncount: 007\nname: demo\n---\n")
    assert md.raw_scalars == {"version": "1.10", "enabled": "yes", "count": "007"}


def test_a_frontmatter_over_its_byte_cap_is_refused() -> None:
    err = refused("---\ndescription: " + "x" * CAP + "\n---\n")
    assert (err.code, err.details["limit"]) == ("frontmatter_too_large", CAP)


BILLION_LAUGHS = "\n".join(
    ["a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']"]
    + [
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
)


def test_billion_laughs_is_refused_before_anything_expands() -> None:
    err = refused(f"---\n{BILLION_LAUGHS}\n---\n")
    assert err.code == "frontmatter_too_complex"
    assert "expands to more than" in err.message


def test_a_merge_key_bomb_is_refused() -> None:
    lines = ["m0: &m0 {k0: v, k1: v}"] + [
        f"m{i}: &m{i} {{<<: [*m{i - 1}], x{i}: *m{i - 1}, y{i}: *m{i - 1}}}" for i in range(1, 24)
    ]
    err = refused("---\n" + "\n".join(lines) + "\n---\n")
    assert err.code == "frontmatter_too_complex"


def test_a_recursive_alias_is_refused() -> None:
    err = refused("---\nloop: &a [1, *a]\n---\n")
    assert err.code == "frontmatter_too_complex"
    assert "recursive" in err.message


@pytest.mark.parametrize("depth", [MAX_DEPTH, 10_000])
def test_deep_nesting_is_refused(depth: int) -> None:
    err = refused("---\nx: " + "[" * depth + "]" * depth + "\n---\n")
    assert err.code == "frontmatter_too_complex"
    assert err.details["line"] == 2


def test_nesting_below_the_cap_is_fine() -> None:
    depth = MAX_DEPTH - 1  # the top-level mapping is one level
    value = parse("---\nx: " + "[" * depth + "]" * depth + "\n---\n").frontmatter["x"]
    levels = 0
    while value != []:
        value, levels = value[0], levels + 1
    assert levels == depth - 1


def test_aliases_that_nest_deeper_than_the_cap_are_refused() -> None:
    lines = ["l0: &l0 [x]"] + [f"l{i}: &l{i} [*l{i - 1}]" for i in range(1, MAX_DEPTH + 2)]
    err = refused("---\n" + "\n".join(lines) + "\n---\n")
    assert err.code == "frontmatter_too_complex"
    assert "once aliases are expanded" in err.message


def test_modest_alias_reuse_is_allowed_and_the_stored_json_stays_bounded() -> None:
    chunk = "y" * 16 * 1024
    ok = parse(f"---\nbase: &b '{chunk}'\nmore: [{', '.join(['*b'] * 10)}]\n---\n")
    assert ok.frontmatter["more"] == [chunk] * 10
    too_many = f"---\nbase: &b '{chunk}'\nmore: [{', '.join(['*b'] * 20)}]\n---\n"
    assert refused(too_many).code == "frontmatter_too_complex"
    assert len(json.dumps(ok.frontmatter)) <= 2 * EXPANSION_FACTOR * CAP


def test_frontmatter_errors_come_out_of_read_package_naming_skill_md() -> None:
    data = make_zip({"demo/SKILL.md": "---\n- not\n- a mapping\n---\n"})
    with pytest.raises(PackageError) as info:
        read_package(data)
    assert (info.value.code, info.value.details["entry"]) == (
        "invalid_frontmatter",
        "demo/SKILL.md",
    )
