"""Upload names are checked; served names and types cannot break headers or run in the origin."""

from __future__ import annotations

import pytest

from backend.artifacts.names import check_file_name, content_disposition, served_type
from backend.errors import InvalidRequest


@pytest.mark.parametrize("name", ["report.csv", "données.txt", "a b (1).tar.gz", ".env"])
def test_a_plain_file_name_is_accepted(name: str) -> None:
    assert check_file_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".",
        "..",
        "../x",
        "a/b",
        "a\\b",
        "x\x00y",
        "line\nbreak",
        "tab\t",
        "\u202eexe.txt",
        "trailing ",
        "é" * 128,
    ],
)
def test_a_name_with_paths_controls_or_excess_length_is_refused(name: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_file_name(name)
    assert refused.value.code == "invalid_file_name"


@pytest.mark.parametrize(
    ("stored", "served"),
    [
        ("text/csv", "text/csv; charset=utf-8"),
        ("image/png", "image/png"),
        ("text/html", "application/octet-stream"),
        ("image/svg+xml", "application/octet-stream"),
        ("application/javascript", "application/octet-stream"),
        ("application/xhtml+xml", "application/octet-stream"),
    ],
)
def test_only_passive_types_are_served_as_themselves(stored: str, served: str) -> None:
    assert served_type(stored) == served


def test_the_disposition_is_an_attachment_of_the_base_name_with_a_utf8_form() -> None:
    header = content_disposition('sub/ré"port\r\n.csv')

    assert header == (
        "attachment; filename=\"r__port__.csv\"; filename*=UTF-8''r%C3%A9%22port__.csv"
    )
    assert "\r" not in header and "\n" not in header
