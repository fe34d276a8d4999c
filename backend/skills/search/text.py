"""Words to search terms, one implementation for both databases and for queries and skills alike.

Both engines index text this module has already normalized (lowercase, stopwords out, English
Snowball stems), PostgreSQL with the `simple` configuration and SQLite FTS5 with `unicode61`, so
a word matches the same skills on either database. Queries also get a small, documented
expansion map (`EXPANSIONS`): people name file types and artefacts by many words ("slides",
"deck", "PowerPoint", "pptx"), skills usually by one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import snowballstemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
MAX_TERM_CHARS = 40  # longer "words" are hashes, base64 or URLs: noise that only costs space

# English function words, words of polite conversation ("please", "thanks", "hi") and words
# every skill uses about itself ("skill", "user", "claude"): they tell no skill from another.
STOPWORDS = frozenset(
    """
    a about above after again against all almost also am an and any are aren as at be because
    been before being below between both but by can cannot could couldn did didn do does doesn
    doing don down during each either else etc even ever every few for from further get gets
    getting got had hadn has hasn have haven having he her here hers herself him himself his how
    i if in into is isn it its itself just let lets like ll may me might mine more most much
    must my myself need needs no nor not now of off often on once one only or other our ours
    ourselves out over own per please quite rather re really s same shall she should shouldn so
    some such t than thank thanks that the their theirs them themselves then there these they
    this those through thus to too under until up upon us ve very via want wants was wasn way
    we were weren what whatever when whenever where whether which while who whom whose why will
    with within without won would wouldn yes yet you your yours yourself yourselves
    hi hello hey ok okay sure thx pls help something anything everything thing things stuff bit
    lot maybe actually basically kind sort
    claude codex agent assistant user users use used uses using
    """.split()
)

# Groups of words people use for the same kind of artefact. A query word in a group also looks
# for the others, at EXPANSION_WEIGHT: a skill that says "pptx" fits "slides", a little less
# surely than one that says "slides".
EXPANSION_GROUPS: tuple[tuple[str, ...], ...] = (
    ("slide", "slides", "deck", "presentation", "powerpoint", "pptx", "keynote"),
    ("spreadsheet", "excel", "xlsx", "xls", "workbook", "sheet"),
    ("docx", "word", "msword"),
    ("pdf", "acrobat"),
    ("csv", "tsv", "tabular"),
    ("chart", "graph", "plot", "visualization", "visualisation"),
    ("diagram", "flowchart", "mermaid"),
    ("image", "picture", "photo", "illustration", "png", "jpeg", "jpg"),
    ("gif", "animated", "animation"),
    ("video", "clip", "movie", "mp4"),
    ("github", "gh"),
    ("ci", "pipeline", "actions"),
    ("pr", "prs", "pull"),
    ("summarise", "summarize", "summary", "digest", "recap", "tldr"),
    ("transcript", "transcription", "recording"),
    ("font", "typeface", "typography"),
    ("colour", "color", "palette"),
    ("website", "webpage", "site", "html"),
    ("frontend", "ui", "interface"),
    ("test", "tests", "testing", "qa"),
    ("bug", "error", "failure", "failing", "broken"),
    ("email", "mail", "newsletter"),
    ("meeting", "minutes", "standup"),
    ("plan", "planning", "roadmap"),
)
EXPANSION_WEIGHT = 0.8

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    stemmed: str = _stemmer.stemWord(word)
    return stemmed


def _lower(word: str) -> str:
    """`word` lowercased, still letters and digits only: lowercasing `İ` (U+0130, the one such
    letter) adds a combining dot, which is dropped, so "İstanbul" is the word "istanbul"."""
    lowered = word.lower()
    return lowered if _WORD.fullmatch(lowered) else "".join(_WORD.findall(lowered))


def words(text: str) -> list[str]:
    """Lowercase words of `text` (letters and digits only); camelCase and snake_case are split
    into their parts."""
    return [_lower(w) for w in _WORD.findall(_CAMEL.sub(" ", text)) if len(w) <= MAX_TERM_CHARS]


def terms(text: str) -> list[str]:
    """The search terms of `text`, in order, repeats kept."""
    return [stem(w) for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


def unique_terms(text: str, *, limit: int | None = None) -> list[str]:
    """`terms(text)` without repeats, in order of first appearance (at most `limit`)."""
    seen = dict.fromkeys(terms(text))
    found = list(seen)
    return found if limit is None else found[:limit]


def _expansions() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in EXPANSION_GROUPS:
        stems = {stem(w) for w in group}
        for s in stems:
            table.setdefault(s, set()).update(stems - {s})
    return {k: frozenset(v) for k, v in table.items()}


EXPANSIONS: Mapping[str, frozenset[str]] = _expansions()


@dataclass(frozen=True)
class QueryTerm:
    """One word of a request: its stem and the stems it expands to."""

    stem: str
    alternatives: frozenset[str]

    @property
    def all_stems(self) -> frozenset[str]:
        return self.alternatives | {self.stem}


def query_terms(query: str, *, limit: int = 32) -> list[QueryTerm]:
    """The distinct terms of a request, with their expansions (at most `limit` terms)."""
    found = unique_terms(query, limit=limit)
    return [QueryTerm(s, EXPANSIONS.get(s, frozenset())) for s in found]


# A description sentence that says when to use the skill ("Use when the user asks to ...",
# "Triggers: ..."): people phrase requests the way these sentences do.
_WHEN = re.compile(
    r"\b(when|whenever|use (it|this|for|to|on|with)|trigger(s|ed)?|if (the )?user|for requests)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
BODY_CHARS = 6000  # the start of the instructions: overview and "when to use" sections
MAX_BODY_TERMS = 600
MAX_FIELD_TERMS = 200


@dataclass(frozen=True)
class SkillText:
    """The search fields of one skill, each its distinct terms joined by spaces."""

    name: str  # name and display name
    tags: str  # tags and metadata values
    when: str  # description sentences that say when to use the skill
    description: str  # the rest of the description
    body: str  # the start of the instructions


def _join(parts: Iterable[str], limit: int = MAX_FIELD_TERMS) -> str:
    return " ".join(unique_terms(" ".join(parts), limit=limit))


def split_description(description: str) -> tuple[str, str]:
    """(sentences saying when to use the skill, the other sentences)."""
    when: list[str] = []
    rest: list[str] = []
    for sentence in _SENTENCE.split(description):
        (when if _WHEN.search(sentence) else rest).append(sentence)
    return " ".join(when), " ".join(rest)


def skill_text(crd: Mapping[str, Any]) -> SkillText:
    """The search fields of a Skill CRD."""
    spec = crd.get("spec", {})
    name = crd["metadata"]["name"]
    when, rest = split_description(str(spec.get("description", "")))
    tags = [str(t) for t in spec.get("tags", [])]
    tags += [str(v) for v in (spec.get("metadata") or {}).values()]
    return SkillText(
        name=_join([name.replace("-", " ").replace("_", " "), str(spec.get("displayName") or "")]),
        tags=_join(tags),
        when=_join([when]),
        description=_join([rest]),
        body=_join([str(spec.get("prompt", ""))[:BODY_CHARS]], MAX_BODY_TERMS),
    )
