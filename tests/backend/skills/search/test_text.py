"""Words to search terms: the same normalization for skills and requests, on both databases."""

from __future__ import annotations

import pytest

from backend.skills.search.engine import request_stems
from backend.skills.search.text import (
    EXPANSION_GROUPS,
    QueryTerm,
    query_terms,
    skill_text,
    split_description,
    stem,
    terms,
    unique_terms,
)


def test_terms_are_lowercase_stems_without_stopwords_or_filler() -> None:
    assert terms("Please make me some Presentations from these notes, thanks!") == [
        "make",
        "present",
        "note",
    ]


def test_names_split_at_hyphens_underscores_and_camel_case() -> None:
    assert terms("gh-fix-ci meeting_minutes FastMCP server") == [
        "gh",
        "fix",
        "ci",
        "meet",
        "minut",
        "fast",
        "mcp",
        "server",
    ]


def test_small_talk_has_no_terms() -> None:
    assert terms("hi, how are you?") == []
    assert terms("ok thanks, that's all") == []


def test_overlong_tokens_are_dropped_as_noise() -> None:
    assert terms("sha " + "a" * 64) == ["sha"]


def test_unique_terms_keep_first_appearance_order_within_a_limit() -> None:
    assert unique_terms("charts chart plot charting plots", limit=2) == ["chart", "plot"]


def test_query_words_expand_within_their_group_only() -> None:
    slides = query_terms("slides")[0]
    assert slides.stem == "slide"
    assert {stem("pptx"), stem("powerpoint"), stem("deck")} <= slides.alternatives
    assert stem("xlsx") not in slides.alternatives
    assert query_terms("weather")[0].alternatives == frozenset()


def test_every_expansion_group_has_distinct_stems() -> None:
    for group in EXPANSION_GROUPS:
        assert len({stem(w) for w in group}) > 1, group


def test_description_sentences_saying_when_to_use_a_skill_are_told_apart() -> None:
    when, rest = split_description(
        "Draw charts from tables. Use when the user asks to plot numbers. Supports SVG."
    )
    assert when == "Use when the user asks to plot numbers."
    assert rest == "Draw charts from tables. Supports SVG."


def test_skill_fields_come_from_name_display_name_tags_description_and_body_start() -> None:
    crd = {
        "metadata": {"name": "chart-painter"},
        "spec": {
            "displayName": "Chart Painter",
            "description": "Draw charts. Use when asked to plot.",
            "tags": ["visualization"],
            "metadata": {"short-description": "Plots numbers"},
            "prompt": "Call draw_chart with the table." + " filler" * 5000 + " zebra",
        },
    }
    text = skill_text(crd)
    assert text.name == "chart painter"
    assert text.tags.split() == ["visual", "plot", "number"]
    assert text.when.split() == ["ask", "plot"]
    assert text.description.split() == ["draw", "chart"]
    assert "draw_chart" not in text.body and "draw" in text.body.split()
    assert "zebra" not in text.body.split()  # only the start of the body is indexed


def test_only_letter_and_digit_stems_reach_the_sql() -> None:
    hostile = "o'reilly'); DROP TABLE kinds;-- “quoted” naïve 東京 İSTANBUL"
    stems = request_stems(query_terms(hostile))
    assert stems and all(s.isalnum() for s in stems)  # the tokenizer split the quotes away
    forged = QueryTerm("x'", frozenset())  # a stem the tokenizer cannot make: refused again
    with pytest.raises(ValueError, match="letters and digits"):
        request_stems([forged])


def test_lowercasing_never_adds_a_mark_to_a_word() -> None:
    # U+0130 is the one letter whose lowercase is not letters only ("i" and U+0307).
    assert terms("İstanbul İzmir") == ["istanbul", "izmir"] == terms("istanbul izmir")
