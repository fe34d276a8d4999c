"""Ranked skill search: the database's full-text engine finds candidates, one formula scores them.

1. The request becomes terms (text.py): stems, stopwords out, each with its expansions.
2. One query counts, over exactly the rows searched, how many there are and how many contain
   each stem (GIN on PostgreSQL, FTS5 on SQLite): the IDF of each term.
3. One query fetches the rows matching the request's rarest terms (`RANK_POOL`): all of them
   when they are at most `SCORE_ALL` (every catalog people read), else the engine's best
   `CANDIDATES` by name, tags, "when to use" and description (PostgreSQL `ts_rank` over the
   weighted `head` tsvector, SQLite `bm25` with column weights). Counts are bounded
   (`ROWS_CAP`, `DF_CAP`), and so is the work at any catalog size. On PostgreSQL the planner is
   kept to the GIN index, which answers without decoding a single tsvector.
4. Each candidate's matched mass M sums, over the request's terms, the term's IDF times the
   weight of the best field holding it (`FIELD_WEIGHTS`; an expansion at `EXPANSION_WEIGHT` of
   that). Its score is the geometric mean of two shares in [0, 1]: coverage, M over the IDF of
   all the request's terms, and evidence, M counted in units of the rarest possible term and
   saturated (`EVIDENCE_HALF`). Coverage alone rates "good morning" matching one body word as
   high as a real fit of a two-word request; mass alone grows with any long request. Within one
   request the ranking is the ranking by M.
5. Scores are computed in Python from the stored terms, so both databases give the same score to
   the same skill, and the threshold means the same on both. Below it nothing is suggested.

Tenancy and the Ghost's selection are the SQL condition of selection.py, in both queries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, and_, func, literal_column, select, table, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from backend.db.models import SYSTEM_USER_ID, SkillSearch
from backend.skills.search.selection import SkillSource
from backend.skills.search.text import EXPANSION_WEIGHT, QueryTerm, query_terms

PUBLIC_NAMESPACE = "public"  # how search results name the namespace of public skills
CANDIDATES = 100
SCORE_ALL = 300  # when the candidate terms match at most this many rows, all are scored
# Statistics are counted up to these caps, so a search does bounded work at any catalog size:
# beyond ROWS_CAP rows the IDF is that of a ROWS_CAP-row catalog, and a term in DF_CAP or more
# of them is "common". Below the caps (the catalogs people read) every count is exact.
ROWS_CAP = 500
DF_CAP = 100
RANK_POOL = 300  # at most about this many matches are ranked by the engine
FIELD_WEIGHTS = (
    ("name_terms", 1.0),
    ("tag_terms", 0.8),
    ("when_terms", 0.8),
    ("desc_terms", 0.7),
    ("body_terms", 0.35),
)
EVIDENCE_HALF = 0.5  # evidence is 1/2 at this many rarest-term units of matched mass
_TERM_COLUMNS = [getattr(SkillSearch, c) for c, _ in FIELD_WEIGHTS]
# Engine weights for finding candidates, in the same field order.
# The engine ranks by name, tags, "when to use" and description only (the body is in the
# matching and the score): on PostgreSQL a small tsvector ranks thousands of rows cheaply.
_PG_WEIGHTS = "{0.0, 0.4, 0.6, 1.0}"  # D body, C description, B tags and when, A name
_FTS_WEIGHTS = "10.0, 6.0, 6.0, 4.0, 0.0"


@dataclass(frozen=True)
class SearchHit:
    kind_id: int
    user_id: int
    namespace: str  # `public` for public skills
    name: str
    description: str
    score: float


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency (always positive)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _pg_match(stems: Sequence[str]) -> ColumnElement[bool]:
    query = " | ".join(f"''{s}''" for s in stems)  # stems are letters and digits only
    return literal_column(f"skill_search.document @@ to_tsquery('simple'::regconfig, '{query}')")


def _fts_rows(stems: Sequence[str]) -> Select[Any]:
    match = " OR ".join(f'"{s}"' for s in stems)
    fts = table("skill_search_fts")
    return (
        select(literal_column("rowid"))
        .select_from(fts)
        .where(literal_column("skill_search_fts").op("MATCH")(match))
    )


def _contains(dialect: str, stems: Sequence[str]) -> ColumnElement[bool]:
    if dialect == "postgresql":
        return _pg_match(stems)
    return SkillSearch.kind_id.in_(_fts_rows(stems))


def _bounded_count(where: ColumnElement[bool], cap: int) -> Any:
    """How many rows match `where`, counted up to `cap`: work bounded at any table size."""
    rows = select(literal_column("1").label("one")).where(where).limit(cap).subquery()
    return select(func.count()).select_from(rows).scalar_subquery()


async def _frequencies(
    session: AsyncSession, dialect: str, where: ColumnElement[bool], stems: Sequence[str]
) -> tuple[int, dict[str, int]]:
    """(rows searched, rows holding each stem), each counted up to its cap."""
    counts = [_bounded_count(where, ROWS_CAP)]
    counts += [_bounded_count(and_(where, _contains(dialect, [s])), DF_CAP) for s in stems]
    row = (await session.execute(select(*counts))).one()
    return int(row[0]), {s: int(c) for s, c in zip(stems, row[1:], strict=True)}


_GIN_ONLY = text(
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true)"
)
_HEAD_COLUMNS = "{name_terms tag_terms when_terms desc_terms}"


def _fts_match(stems: Sequence[str], *, head: bool = False) -> str:
    terms = " OR ".join(f'"{s}"' for s in stems)
    return f"{_HEAD_COLUMNS} : ({terms})" if head else terms


async def _candidates(
    session: AsyncSession,
    dialect: str,
    where: ColumnElement[bool],
    stems: Sequence[str],
    scored: Sequence[str],
    *,
    ranked: bool,
) -> Sequence[Any]:
    """Rows matching any of `stems`: all of them, or (`ranked`) the engine's best among those
    matching in name, tags, "when to use" or description; each with `_presence(scored)`."""
    if not ranked:
        ids = select(SkillSearch.kind_id).where(where, _contains(dialect, stems)).limit(SCORE_ALL)
    elif dialect == "postgresql":
        query = " | ".join(f"'{s}'" for s in stems)
        tsquery = func.to_tsquery(literal_column("'simple'::regconfig"), query)
        head: Any = literal_column("skill_search.head")
        rank = func.ts_rank(literal_column(f"'{_PG_WEIGHTS}'::float4[]"), head, tsquery)
        ids = (
            select(SkillSearch.kind_id)
            .where(where, head.op("@@")(tsquery))
            .order_by(rank.desc(), SkillSearch.name)
            .limit(CANDIDATES)
        )
    else:
        fts = table("skill_search_fts")
        found = (
            select(
                literal_column("rowid").label("rid"),
                literal_column(f"bm25(skill_search_fts, {_FTS_WEIGHTS})").label("rank"),
            )
            .select_from(fts)
            .where(literal_column("skill_search_fts").op("MATCH")(_fts_match(stems, head=True)))
            .subquery()
        )
        ids = (
            select(SkillSearch.kind_id)
            .join(found, found.c.rid == SkillSearch.kind_id)
            .where(where)
            .order_by(found.c.rank, SkillSearch.name)
            .limit(CANDIDATES)
        )
    # The term fields are tested only for the rows chosen: the database would otherwise test
    # every matching row before sorting. Their order does not matter, scores order the hits.
    stmt = select(
        SkillSearch.kind_id,
        SkillSearch.user_id,
        SkillSearch.namespace,
        SkillSearch.name,
        SkillSearch.description,
        *_presence(scored),
    ).where(SkillSearch.kind_id.in_(ids.scalar_subquery()))
    return (await session.execute(stmt)).all()


def _presence(stems: Sequence[str]) -> list[Any]:
    """Whether each term field holds each stem, field by field: what scoring needs, computed
    where the rows are. Fetching the fields instead moved kilobytes of body terms per candidate
    to Python to test a handful of words. Written as SQL text: built per search, dozens of
    expression objects cost more than the query. Stems are letters and digits (text.py)."""
    return [
        literal_column(f"(' ' || skill_search.{column} || ' ') LIKE '% {stem} %'")
        for column, _ in FIELD_WEIGHTS
        for stem in stems
    ]


def _fields(row: Any, stems: Sequence[str]) -> list[set[str]]:
    """The stems of `stems` each term field holds, from the row's `_presence` columns."""
    flags = row[5:]
    width = len(stems)
    return [
        {stem for j, stem in enumerate(stems) if flags[i * width + j]}
        for i in range(len(_TERM_COLUMNS))
    ]


def _pool(present: Sequence[str], df: dict[str, int]) -> list[str]:
    """The terms candidates come from: the rarest, as long as together they match at most
    RANK_POOL rows (at least one term). A skill holding only commoner terms of the request
    cannot outscore one holding its rarest; the engine ranks a bounded set."""
    pool: list[str] = []
    total = 0
    # Among terms too common to count apart, longer words first: they tend to be the rarer.
    for stem in sorted(present, key=lambda s: (df[s], -len(s), s)):
        if pool and total + df[stem] > RANK_POOL:
            break
        pool.append(stem)
        total += df[stem]
    return pool


def _term_weights(terms: Sequence[QueryTerm], df: dict[str, int], n: int) -> list[float]:
    weights = []
    for term in terms:
        seen = df.get(term.stem, 0) or max((df.get(a, 0) for a in term.alternatives), default=0)
        weights.append(idf(seen, n))
    return weights


def coverage(
    fields: Sequence[set[str]], terms: Sequence[QueryTerm], weights: Sequence[float]
) -> float:
    """The IDF-weighted share of `terms` a skill with these term fields covers, in [0, 1]."""
    total = sum(weights)
    if total <= 0:
        return 0.0
    got = 0.0
    for term, weight in zip(terms, weights, strict=True):
        best = 0.0
        for found, (_, field_weight) in zip(fields, FIELD_WEIGHTS, strict=True):
            if term.stem in found:
                best = max(best, field_weight)
            elif term.alternatives and not term.alternatives.isdisjoint(found):
                best = max(best, field_weight * EXPANSION_WEIGHT)
        got += weight * best
    return got / total


def score(
    fields: Sequence[set[str]], terms: Sequence[QueryTerm], weights: Sequence[float], n: int
) -> float:
    """How well a skill with these term fields fits the request, in [0, 1] (see the module)."""
    share = coverage(fields, terms, weights)
    units = share * sum(weights) / idf(0, n)
    return math.sqrt(share * units / (units + EVIDENCE_HALF))


async def search(
    session: AsyncSession,
    source: SkillSource,
    query: str,
    *,
    limit: int,
    threshold: float,
) -> list[SearchHit]:
    """The skills of `source` that fit `query`, best first, each scoring at least `threshold`."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    stems = sorted({s for t in terms for s in t.all_stems})
    dialect = session.get_bind().dialect.name
    where = source.condition()
    if dialect == "postgresql":
        # Every step below reads matches through the GIN index (exact: no tsvector is decoded
        # to count or find them); the planner would rather filter rows by owner and decode the
        # tsvector of each. For the rest of this transaction only (callers end it soon after).
        await session.execute(_GIN_ONLY)
    n, df = await _frequencies(session, dialect, where, stems)
    present = [s for s in stems if df[s] > 0]
    if not present:
        return []
    if n <= SCORE_ALL:  # few enough to score every skill that matches a term
        pool, ranked = present, False
    else:
        pool = _pool(present, df)
        ranked = sum(df[s] for s in pool) > CANDIDATES
    rows = await _candidates(session, dialect, where, pool, present, ranked=ranked)
    weights = _term_weights(terms, df, n)
    hits = []
    for row in rows:
        fields = _fields(row, present)
        value = round(score(fields, terms, weights, n), 4)
        if value >= threshold:
            namespace = PUBLIC_NAMESPACE if row.user_id == SYSTEM_USER_ID else row.namespace
            hits.append(
                SearchHit(row.kind_id, row.user_id, namespace, row.name, row.description, value)
            )
    hits.sort(key=lambda h: (-h.score, h.name, h.namespace, h.kind_id))
    return hits[:limit]
