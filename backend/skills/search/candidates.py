"""The statement that chooses a search's candidates and reads them with their flags (engine.py).

Stems are written into the SQL as literals: they are letters and digits only (the engine checks
them again, `request_stems`). The selection's condition comes as `Where` (condition.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.skills.search.condition import Where
from backend.skills.search.scoring import FIELD_WEIGHTS

CANDIDATES = 100
SCORE_ALL = 300  # when the candidate terms match at most this many rows, all are scored
RANK_POOL = 300  # at most this many matches are ranked by the engine
# ... and at most this many when the counts are a sample's (engine.ROWS_CAP): the rows that
# reach the engine's rank are then some of many more matches, in the table's order, so fewer
# serve as well. Over the 10,000 skills of bench.catalog the labelled requests found their
# skill in the top 5 as often with 200 (0.88) as with 300 (0.86), at 6 % less turn preparation.
SAMPLED_RANK_POOL = 200
# A term in at most this many rows of the counts is rare: the rows holding one, in any field,
# enter the pool first, at most RARE_ROWS of them (a 10,000-skill catalog's rare term is in
# about 60 rows), so no number of rows holding a common term can crowd them out.
RARE_DF = 3
RARE_ROWS = 50
_PAIRED = 6  # rows holding two of the pool's first this many terms are ranked first
# Engine weights for finding candidates, in the same field order.
# The engine ranks by name, tags, "when to use" and description only (the body is in the
# matching and the score): on PostgreSQL the body's weight D counts 0.
_PG_WEIGHTS = "{0.0, 0.4, 0.6, 1.0}"  # D body, C description, B tags and when, A name
_FTS_WEIGHTS = "10.0, 6.0, 6.0, 4.0, 0.0"
# The weight of each field's words in PostgreSQL's `document`, in the same field order
# (migration 0003): tags and "when to use" share B, as they share their field weight.
PG_FIELD_WEIGHTS = "ABBCD"
_PG_LABELS = "".join(sorted(set(PG_FIELD_WEIGHTS)))


def _tsquery(text: str) -> str:
    return f"to_tsquery('simple'::regconfig, '{text}')"


def _pg_query(stems: Sequence[str]) -> str:
    return _tsquery(" | ".join(f"''{s}''" for s in stems))  # stems are letters and digits only


def contains(dialect: str, stems: Sequence[str]) -> str:
    if dialect == "postgresql":
        return f"skill_search.document @@ {_pg_query(stems)}"
    return (
        "skill_search.kind_id IN (SELECT rowid FROM skill_search_fts "
        f"WHERE skill_search_fts MATCH '{_fts_any(stems)}')"
    )


# Undoes engine.GIN_ONLY for what follows the candidates' statement (the settings' defaults):
# another search in the transaction samples its selection by an ordered index scan (sample.py),
# which GIN_ONLY would turn into reading and sorting the whole selection.
_GIN_DONE = (
    "concat(set_config('enable_seqscan', 'on', true), set_config('enable_indexscan', 'on', true))"
)


_HEAD_COLUMNS = "{name_terms tag_terms when_terms desc_terms}"


def _fts_any(stems: Sequence[str]) -> str:
    return " OR ".join(f'"{s}"' for s in stems)


def _fts_head(stems: Sequence[str]) -> str:
    """FTS5 query: rows holding any of `stems` in name, tags, "when to use" or description."""
    return f"{_HEAD_COLUMNS} : ({_fts_any(stems)})"


def _candidates(rare: Sequence[str]) -> int:
    """How many candidates are scored: the rare rows come on top of `CANDIDATES` ranked ones,
    so they take no place of the engine's best."""
    return CANDIDATES + (RARE_ROWS if rare else 0)


def _candidate_ids(
    dialect: str, where: str, stems: Sequence[str], rare: Sequence[str], *, ranked: int
) -> str:
    """Rows matching any of `stems`: all of them, or (`ranked`) the engine's best: the rows
    holding one of the `rare` stems in any field, then by the engine's rank those holding any
    in name, tags, "when to use" or description (at most `ranked` of those on PostgreSQL; 0:
    all rows, none ranked). A rare word finds its skill at any catalog size, in its
    instructions too, beside any number of rows holding a common word. By `kind_id`; on
    PostgreSQL by `ctid`, the rows' place, which the statement reading them then visits
    directly (one statement, one snapshot: the places hold)."""
    if not ranked:
        key = "ctid" if dialect == "postgresql" else "kind_id"
        return (
            f"SELECT {key} FROM skill_search WHERE ({where}) AND {contains(dialect, stems)} "
            f"LIMIT {SCORE_ALL}"
        )
    if dialect == "postgresql":
        return _pg_ranked_ids(where, stems, rare, ranked)
    best = (
        "SELECT skill_search.kind_id AS kind_id FROM skill_search JOIN (SELECT rowid AS rid, "
        f"bm25(skill_search_fts, {_FTS_WEIGHTS}) AS rank FROM skill_search_fts "
        f"WHERE skill_search_fts MATCH '{_fts_head(stems)}') AS found "
        f"ON found.rid = skill_search.kind_id WHERE {where} "
        f"ORDER BY found.rank, skill_search.name LIMIT {CANDIDATES}"
    )
    if not rare:
        return best
    # Each part ordered and cut on its own, as a statement of its own: in a union SQLite would
    # test the ranked part's MATCH row by row of the selection. A row in both counts once.
    rare_rows = (
        "SELECT kind_id FROM skill_search WHERE kind_id IN (SELECT rowid FROM skill_search_fts "
        f"WHERE skill_search_fts MATCH '{_fts_any(rare)}') AND ({where}) "
        f"ORDER BY name LIMIT {RARE_ROWS}"
    )
    return f"SELECT * FROM ({rare_rows}) UNION SELECT * FROM ({best})"


def _pg_ranked_ids(where: str, stems: Sequence[str], rare: Sequence[str], pool: int) -> str:
    """The best `CANDIDATES` among at most `pool` rows matching `stems` (and the rare
    rows on top): first at most `RARE_ROWS` rows holding one of the `rare` stems in any
    field, then by `ts_rank` the rows holding two of `stems` or more in `head`, then those
    holding any there. GIN finds the matches without reading a row; ranking reads each row's
    `document`, so its rows are bounded like the counts are: the stems of a large catalog may
    each be in thousands of rows. A branch runs only when those before it gave fewer than
    `pool` rows.

    Matched in `head`, ranked over `document`: `document` is `head` followed by the body at
    weight D, which `_PG_WEIGHTS` weighs 0, so `ts_rank` gives a row the same value over either
    (a position at weight 0 adds nothing, and the body's positions come after the head's).
    `document` is stored in the row, `head` mostly out of line (TOAST): a lookup per row."""
    lexemes = [f"''{s}''" for s in stems]  # stems are letters and digits only
    any_of = " | ".join(lexemes)
    rank = f"ts_rank('{_PG_WEIGHTS}'::float4[], skill_search.document, {_tsquery(any_of)})"
    pairs = _two_of(lexemes[:_PAIRED])
    tiers: list[tuple[int, str, int]] = []  # (order, condition, rows)
    if rare:
        rare_of = " | ".join(f"''{s}''" for s in rare)
        tiers.append((0, f"skill_search.document @@ {_tsquery(rare_of)}", RARE_ROWS))
    if pairs:
        tiers.append((1, f"skill_search.head @@ {_tsquery(pairs)}", pool))
    tiers.append((1, f"skill_search.head @@ {_tsquery(any_of)}", pool))
    # A branch's rank is computed only for the rows it gives; the outer LIMIT stops a branch
    # as soon as those before it gave enough. A row in two branches counts once, in the first.
    branches = " UNION ALL ".join(
        f"(SELECT ctid, name, {rank} AS rank, {order} AS tier FROM skill_search "
        f"WHERE ({where}) AND {condition} LIMIT {rows})"
        for order, condition, rows in tiers
    )
    return (
        f"SELECT ctid FROM (SELECT * FROM ({branches}) AS tiers LIMIT {pool}) AS pooled "
        "GROUP BY ctid, name "
        f"ORDER BY min(tier), max(rank) DESC, name LIMIT {_candidates(rare)}"
    )


def _two_of(lexemes: Sequence[str]) -> str:
    """tsquery text matching the rows that hold two of `lexemes` or more ('' for fewer than
    two lexemes): `a & (b | c) | b & c`, each lexeme with those after it. The same rows as the
    OR of every pair, in a third fewer operands for GIN to test at each row it meets."""
    parts = []
    for i, first in enumerate(lexemes[:-1]):
        rest = lexemes[i + 1 :]
        later = rest[0] if len(rest) == 1 else f"({' | '.join(rest)})"
        parts.append(f"({first} & {later})")
    return " | ".join(parts)


def candidates_sql(
    dialect: str,
    where: Where,
    pool: Sequence[str],
    rare: Sequence[str],
    scored: Sequence[str],
    *,
    ranked: int,
) -> str:
    """The statement reading the rows `_candidate_ids` chooses (from the `pool` stems, its
    `rare` ones first; `ranked`: at most so many matches ranked, 0: all scored), each with the
    flags of the `scored` stems."""
    # The term fields are tested only for the rows chosen: the database would otherwise test
    # every matching row before sorting. Their order does not matter, scores order the hits.
    ids = _candidate_ids(dialect, where.sql, pool, rare, ranked=ranked)
    columns = "kind_id, user_id, namespace, name, description"
    if dialect == "postgresql":
        flags = _pg_presence(scored)
        return (
            f"SELECT {columns}, {flags} AS flags FROM skill_search AS c "
            f"WHERE c.ctid = ANY(ARRAY({ids})) AND (SELECT {_GIN_DONE}) IS NOT NULL"
        )
    padded = ", ".join(
        f"' ' || {column} || ' ' AS f{i}" for i, (column, _) in enumerate(FIELD_WEIGHTS)
    )
    return (
        f"SELECT {columns}, {_presence(scored)} AS flags "
        f"FROM (SELECT {columns}, {padded} FROM skill_search WHERE kind_id IN ({ids})) AS c"
    )


def _presence(stems: Sequence[str]) -> str:
    """SQLite: whether each term field holds each stem, field by field, as one string of `0`
    and `1`: what scoring needs, computed where the rows are. Fetching the fields instead
    moved kilobytes of body terms per candidate to Python to test a handful of words; one
    column per flag cost more to describe and convert than the scoring. Stems are letters
    and digits. Written short: the driver scans the statement's text for placeholders on
    every search."""
    tests = [f"(instr(c.f{i},' {stem} ')>0)" for i in range(len(FIELD_WEIGHTS)) for stem in stems]
    return concat(tests)  # a comparison is 0 or 1


def _pg_presence(stems: Sequence[str]) -> str:
    """PostgreSQL: for each of `stems` in order, the best weight of the row's `document` holding
    it (`A` to `D`; `PG_FIELD_WEIGHTS` says the fields of each), or `0`: lookups in the
    tsvector the row holds, where testing the term texts read each candidate's body terms out
    of line (TOAST). A stem the row lacks is one test, not one per weight. The best weight is
    all a score needs: field weights fall from A to D (`FIELD_WEIGHTS`), and a term is credited
    by the best field holding it. The scorer reads these as they are (`_PG_MARKS`): a stem
    whose best weight is A credits the name's weight, not the lower ones of B to D."""
    tests = []
    for stem in stems:
        found = " ".join(
            f"WHEN c.document@@'''{stem}'':{label}'::tsquery THEN '{label}'"
            for label in _PG_LABELS[:-1]
        )
        tests.append(
            f"CASE WHEN NOT c.document@@'''{stem}'''::tsquery THEN '0' {found} "
            f"ELSE '{_PG_LABELS[-1]}' END"
        )
    return concat(tests)


def concat(parts: Sequence[str]) -> str:
    """`parts` joined with `||` as a balanced tree: a long request stays far below SQLite's
    expression depth limit."""
    if len(parts) == 1:
        return parts[0]
    half = len(parts) // 2
    return f"({concat(parts[:half])} || {concat(parts[half:])})"
