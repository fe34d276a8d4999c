"""The word counts of a selection's sample, counted once per version of the sample and kept.

A search's IDF comes from the first `ROWS_CAP` rows of its selection (engine.py). Counting each
request's stems in them read every sampled row's terms on every turn: at scale, the costliest
step of a turn's preparation. Those counts depend on the sample's rows only, not on the request,
so the sample's every word is counted at once and kept per process, under the sample's
fingerprint: its number of rows and the sum of their `revision`, a random number each write of a
search row draws anew (index.py).

Whether they still hold is read from the database every time, so a write from any process (a
new version, a skill enabled, disabled, added, removed or relabelled into or out of the sample)
is seen by the next search of every process, in two steps:

1. the generations of the selection's owners (`generation_sql`): one number per user, which
   triggers draw anew on every write of their search rows, labels or plugins (migration 0009).
   Unchanged, nothing the selection reads has changed: a primary-key read per owner, where the
   fingerprint scanned the sample's index entries;
2. when one changed, the sample's fingerprint: a write elsewhere in the owner's skills leaves
   the sample as it was, and its counts are kept under the new generations; else the sample is
   counted again, in the same statement.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

ROWS_CAP = 500  # the sample: at most this many rows of a selection (engine.py)
REVISION_BITS = 52  # ROWS_CAP revisions sum below 2**63: SQLite's sum() does not overflow
assert ROWS_CAP << REVISION_BITS < 1 << 63
_MAX_SAMPLES = 64  # samples kept per process, least recently used out
MAX_PROBES = 4096  # probe answers kept per sample and generation
_FINGERPRINT = re.compile(r"\d+,\d+")


@dataclass(frozen=True)
class SampleWords:
    """Every word of one version of a sample, with how many of its rows hold it; `generation`:
    the owners' generations it was last confirmed under (`generation_sql`), and `probes`: under
    that generation, whether any row of the selection holds a stem the sample misses (engine.py),
    by stem. A fact of the selection like the counts: the same rare words and expansions
    are probed for request after request."""

    fingerprint: str
    rows: int
    df: Mapping[str, int]
    generation: str
    probes: dict[str, bool] = field(default_factory=dict, compare=False)

    def remember(self, answers: Mapping[str, bool]) -> None:
        """Keep probe answers read under `generation`, up to `MAX_PROBES`."""
        for stem, holds in answers.items():
            if len(self.probes) >= MAX_PROBES:
                break
            self.probes[stem] = holds


_KEPT: OrderedDict[Hashable, SampleWords] = OrderedDict()


def kept(key: Hashable) -> SampleWords | None:
    found = _KEPT.get(key)
    if found is not None:
        _KEPT.move_to_end(key)
    return found


def keep(key: Hashable, words: SampleWords) -> None:
    _KEPT[key] = words
    _KEPT.move_to_end(key)
    if len(_KEPT) > _MAX_SAMPLES:
        _KEPT.popitem(last=False)


def forget_all() -> None:
    """Tests: start from no kept counts."""
    _KEPT.clear()


def generation_sql(owners: Sequence[int]) -> str:
    """One SQL expression: the generations of the users `owners` as text, in their order, `-`
    for a user without one. The same text on both databases."""
    assert owners and all(isinstance(u, int) for u in owners), owners  # written as literals
    parts = [
        f"coalesce((SELECT CAST(generation AS TEXT) FROM skill_generations "
        f"WHERE user_id = {int(u)}), '-')"
        for u in owners
    ]
    return " || ',' || ".join(parts)


def sample_sql(dialect: str, where: str, known: SampleWords | None) -> str:
    """One SQL expression over the sample of `where`: its fingerprint as text `rows,sum`, and
    when that is not `known`'s, `;` and every word of the sample with its count (`read`).

    The fingerprint and the words come from the same rows: the words are read by the ids the
    fingerprint aggregated, in the same statement (one snapshot)."""
    fingerprint = known.fingerprint if known is not None else ""
    assert fingerprint == "" or _FINGERPRINT.fullmatch(fingerprint), fingerprint
    # By revision: a random sample, the same until a write (a tie of 52 random bits would only
    # count it again). A plain LIMIT took the rows a scan met first, and PostgreSQL starts a
    # large table's scans where another one is (synchronized scans): a new sample each time.
    # An index gives an owner's namespace in this order without sorting it.
    sample = (
        f"SELECT kind_id, revision FROM skill_search WHERE {where} "
        f"ORDER BY skill_search.revision LIMIT {ROWS_CAP}"
    )
    if dialect == "postgresql":
        ids = "array_agg(t.kind_id)"
        # Each row's lexemes once (a tsvector holds each lexeme once), counted over the rows.
        words = (
            "(SELECT string_agg(w.word || ' ' || w.n, ' ') FROM (SELECT u.word, count(*) AS n "
            "FROM skill_search AS x, unnest(tsvector_to_array(x.document)) AS u(word) "
            "WHERE x.kind_id = ANY(s.ids) GROUP BY u.word) AS w)"
        )
    else:
        ids = "group_concat(t.kind_id)"
        # The terms FTS5 indexes, a line per row; `read` counts each row's words once.
        terms = " || ' ' || ".join(
            f"x.{c}" for c in ("name_terms", "tag_terms", "when_terms", "desc_terms", "body_terms")
        )
        words = (
            f"(SELECT group_concat({terms}, char(10)) FROM skill_search AS x "
            "WHERE x.kind_id IN (SELECT value FROM json_each('[' || s.ids || ']')))"
        )
    return (
        f"(SELECT s.fp || CASE WHEN s.fp = '{fingerprint}' THEN '' "
        f"ELSE ';' || coalesce({words}, '') END "
        f"FROM (SELECT count(*) || ',' || coalesce(sum(t.revision), 0) AS fp, {ids} AS ids "
        f"FROM ({sample}) AS t) AS s)"
    )


def read(dialect: str, value: str, known: SampleWords | None, generation: str) -> SampleWords:
    """The sample's words from `sample_sql`'s `value`, read under the owners' `generation`:
    `known` when they are its words under that generation."""
    fingerprint, counted, words = value.partition(";")
    if not counted:
        assert known is not None and known.fingerprint == fingerprint, (fingerprint, known)
        if known.generation == generation:
            return known
        return replace(known, generation=generation, probes={})  # answers of the old one go
    rows = int(fingerprint.split(",")[0])
    df: Counter[str] = Counter()
    if dialect == "postgresql":
        parts = words.split()
        df.update({word: int(n) for word, n in zip(parts[::2], parts[1::2], strict=True)})
    else:
        for line in words.split("\n"):
            df.update(set(line.split()))
    return SampleWords(fingerprint, rows, dict(df), generation)
