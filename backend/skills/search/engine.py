"""Ranked skill search: the database's full-text engine finds candidates, one formula scores them.

1. The request becomes terms (text.py): stems, stopwords out, each with its expansions.
2. One query counts how many rows are searched and how many contain each stem: the IDF of each
   term. Exact up to `ROWS_CAP` rows (every catalog people read); a larger catalog's counts are
   those of a `ROWS_CAP`-row sample of it, whose word counts are kept per version of the
   sample (`CountsQuery`, sample.py).
3. One query fetches the rows matching the request's rarest terms (`RANK_POOL`): all of them
   when they are at most `SCORE_ALL` (every catalog people read), else the engine's best
   `CANDIDATES` by name, tags, "when to use" and description (PostgreSQL `ts_rank` of at
   most `RANK_POOL` matches of the weighted `head` tsvector, `SAMPLED_RANK_POOL` when the
   counts are a sample's, SQLite `bm25` with column
   weights), and on top of them the rows holding a rare term (`RARE_DF`) in any field, its
   body too: a large catalog finds a rare word as a small one does. Counts are bounded
   (`ROWS_CAP`, `DF_CAP`), and so is the work at any catalog size. On PostgreSQL the planner
   is kept to the GIN index for finding matches. A turn may send this statement before its
   counts are confirmed, planned on the counts kept for the sample (`Prefetch`): its rows
   count only if the confirmed counts are the same.
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

import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from backend.db.models import SYSTEM_USER_ID
from backend.skills.search import sample
from backend.skills.search.candidates import (
    CANDIDATES,
    PG_FIELD_WEIGHTS,
    RANK_POOL,
    RARE_DF,
    SAMPLED_RANK_POOL,
    SCORE_ALL,
    candidates_sql,
    concat,
    contains,
)
from backend.skills.search.condition import Where, where_sql
from backend.skills.search.sample import SampleWords
from backend.skills.search.scoring import PRESENCE_MARKS, Scorer, term_weights
from backend.skills.search.selection import SkillSource
from backend.skills.search.text import QueryTerm, query_terms

if TYPE_CHECKING:
    from backend.skills.search.semantic import SemanticRanker

PUBLIC_NAMESPACE = "public"  # how search results name the namespace of public skills
# Statistics are counted up to these caps, so a search does bounded work at any catalog size:
# beyond ROWS_CAP rows the IDF is that of a ROWS_CAP-row sample, and a term in DF_CAP or more
# of them is "common". Below the caps (the catalogs people read) every count is exact.
ROWS_CAP = sample.ROWS_CAP
DF_CAP = 100
# How a PostgreSQL candidate's flags (candidates.py) mark each field: one block, each stem's
# best weight.
_PG_MARKS = tuple((0, label) for label in PG_FIELD_WEIGHTS)


@dataclass(frozen=True)
class SearchHit:
    kind_id: int
    user_id: int
    namespace: str  # `public` for public skills
    name: str
    description: str
    score: float


_SQL_SAFE_STEM = re.compile(r"[^\W_]+")  # what may be written into SQL as a literal


async def _rows(session: AsyncSession, sql: str, where: Where) -> Sequence[Any]:
    connection = await session.connection()
    return (await connection.exec_driver_sql(sql, dict(where.params))).all()


def _bounded_count(where: str, cap: int) -> str:
    """How many rows match `where`, counted up to `cap`: work bounded at any table size."""
    return f"(SELECT count(*) FROM (SELECT 1 FROM skill_search WHERE {where} LIMIT {cap}) AS r)"


@dataclass(frozen=True)
class Counts:
    """What a request's scores rest on, over the rows searched: how many rows there are
    (up to `ROWS_CAP`) and how many of those hold each of the request's stems (each up to
    `DF_CAP`; see `frequencies_sql`)."""

    rows: int
    df: Mapping[str, int]


def request_stems(terms: Sequence[QueryTerm]) -> list[str]:
    """Every stem a search for `terms` counts and tests (the terms and their expansions).

    Stems are written into the SQL as literals: the tokenizer yields letters and digits only,
    and this checks it again, so a change there cannot open an injection."""
    stems = sorted({s for t in terms for s in t.all_stems})
    unsafe = [s for s in stems if not _SQL_SAFE_STEM.fullmatch(s)]
    if unsafe:
        raise ValueError(f"search stems must be letters and digits: {unsafe!r}")
    return stems


def _probes(dialect: str, where: Where, stems: Sequence[str]) -> str:
    """One SQL expression: for each of `stems`, `1` when a row of `where` holds it, else `0`,
    as text in their order. For stems a full sample misses: rare, so an index probe of their
    few rows each."""
    if not stems:
        return "''"
    tests = [
        f"CASE WHEN {_bounded_count(f'({where.sql}) AND {contains(dialect, [s])}', 1)} > 0 "
        "THEN '1' ELSE '0' END"
        for s in stems
    ]
    return concat(tests)


@dataclass
class CountsQuery:
    """How a search gets its `Counts`: an SQL expression a statement carries (the turn's catalog
    query does), then `counts` with its value.

    Counted in the sample of `where` (its first `ROWS_CAP` rows; `n` of the scores): every
    row of the catalogs people read, exact there, and a sample of a larger one, whose IDF is
    that of a `ROWS_CAP`-row catalog anyway. The sample's word counts are kept per process
    (sample.py): with them, the expression reads only the owners' generations, and `counts`
    confirms the sample by its fingerprint in one more statement only when a generation
    changed. A stem the full sample misses is rare: it counts as in one row when any row of
    `where` holds it (an index probe of its few rows), so it is still searched."""

    dialect: str
    where: Where
    stems: list[str]
    key: tuple[Any, ...]
    known: SampleWords | None
    probed: list[str]  # stems the kept sample misses: probed, or answered by `known.probes`

    @classmethod
    def of(cls, dialect: str, where: Where, stems: Sequence[str]) -> CountsQuery:
        key = (dialect, where.sql, tuple(sorted(where.params.items())))
        known = sample.kept(key)
        return cls(dialect, where, list(stems), key, known, _missed(known, stems))

    def _unanswered(self) -> list[str]:
        """The stems to probe when the kept counts hold: those no kept answer covers."""
        kept = self.known.probes if self.known is not None else {}
        return [s for s in self.probed if s not in kept]

    def sql(self) -> str:
        """Text `<generations>#<sample>|<probes>`, `<sample>` empty when counts are kept (and
        `<probes>` then only the stems no kept answer covers)."""
        if self.known is None:
            return self._confirming()
        generation = sample.generation_sql(self.where.owners)
        return concat([generation, "'#|'", _probes(self.dialect, self.where, self._unanswered())])

    def _confirming(self) -> str:
        """`sql` that also reads the sample: its fingerprint, and its words when not kept."""
        parts = [sample.generation_sql(self.where.owners), "'#'"]
        parts += [sample.sample_sql(self.dialect, self.where.sql, self.known), "'|'"]
        parts.append(_probes(self.dialect, self.where, self.probed))
        return concat(parts)

    async def counts(self, session: AsyncSession, value: object) -> Counts:
        head, _, answers = str(value).rpartition("|")
        generation, _, read = head.partition("#")
        known = self.known
        if read:
            asked = self.probed
            words = sample.read(self.dialect, read, known, generation)
            if words is not known:
                sample.keep(self.key, words)
        elif known is not None and known.generation == generation:
            asked, words = self._unanswered(), known
        else:
            # A write since the counts were kept: the sample may be another. Its statement
            # keeps the search that follows on the GIN indexes, as the first one did.
            columns = [self._confirming()]
            if self.dialect == "postgresql":
                columns.append(GIN_ONLY)
            (row,) = await _rows(session, f"SELECT {', '.join(columns)}", self.where)
            return await self.counts(session, row[0])
        found = {s: answer == "1" for s, answer in zip(asked, answers, strict=True)}
        missed = [s for s in _missed(words, self.stems) if s not in found and s not in words.probes]
        if missed:  # counted anew just now: probe the stems the new counts miss
            probe = f"SELECT {_probes(self.dialect, self.where, missed)}"
            (row,) = await _rows(session, probe, self.where)
            found.update({s: answer == "1" for s, answer in zip(missed, str(row[0]), strict=True)})
        words.remember(found)
        kept = words.probes  # up to MAX_PROBES answers: looked up, not copied
        df = {
            s: min(words.df.get(s, 0), DF_CAP) or int(found.get(s, kept.get(s, False)))
            for s in self.stems
        }
        return Counts(min(words.rows, ROWS_CAP), df)


def _missed(words: SampleWords | None, stems: Sequence[str]) -> list[str]:
    """The stems a full sample does not hold (a partial one is the whole selection)."""
    if words is None or words.rows < ROWS_CAP:
        return []
    return [s for s in stems if s not in words.df]


# Selected on PostgreSQL, keeps the plans of the rest of the transaction on the GIN indexes:
# the candidates of a search are then found through them (no tsvector is decoded to find
# them); the planner would rather filter rows by owner and decode the tsvector of each. For
# the rest of this transaction only (callers end it soon after). The statement selecting it
# is planned before it runs: it sets the plans of the statements that follow, not its own.
GIN_ONLY = (
    "concat(set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true))"
)


async def _counts(
    session: AsyncSession, dialect: str, where: Where, stems: Sequence[str]
) -> Counts:
    """The rows searched and the rows holding each stem, in one statement that on PostgreSQL
    also keeps the search's next statement on the GIN indexes (`GIN_ONLY`)."""
    query = CountsQuery.of(dialect, where, stems)
    columns = [query.sql()]
    if dialect == "postgresql":
        columns.append(GIN_ONLY)
    (row,) = await _rows(session, f"SELECT {', '.join(columns)}", where)
    return await query.counts(session, row[0])


def _pool(present: Sequence[str], df: Mapping[str, int]) -> list[str]:
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


@dataclass(frozen=True)
class _Plan:
    """What a search for `terms` reads, given its counts."""

    terms: list[QueryTerm]
    present: list[str]  # the request's stems some row holds: scored
    pool: list[str]  # the stems candidates come from
    ranked: int  # the engine ranks at most so many of the pool's matches (0: all are scored)
    rare: list[str]  # when ranked: the pool's rare stems, whose rows enter first

    def sql(self, dialect: str, where: Where) -> str:
        return candidates_sql(
            dialect, where, self.pool, self.rare, self.present, ranked=self.ranked
        )


def _plan(terms: list[QueryTerm], stems: Sequence[str], counts: Counts) -> _Plan | None:
    """The search's plan; None when no row holds any of its stems."""
    n, df = counts.rows, counts.df
    present = [s for s in stems if df[s] > 0]
    if not present:
        return None
    if n <= SCORE_ALL:  # few enough to score every skill that matches a term
        return _Plan(terms, present, present, 0, [])
    pool = _pool(present, df)
    # From a sample of a larger catalog, the counts say how rare a term is, not how many rows
    # hold it: the engine ranks some of the matches. From exact counts the pool's matches are
    # at most RANK_POOL: it ranks them all when they are more than the candidates.
    sampled = n >= ROWS_CAP
    ranked = sampled or sum(df[s] for s in pool) > CANDIDATES
    rows = (SAMPLED_RANK_POOL if sampled else RANK_POOL) if ranked else 0
    rare = [s for s in pool if df[s] <= RARE_DF] if ranked else []
    return _Plan(terms, present, pool, rows, rare)


@dataclass(frozen=True)
class Prefetch:
    """A search's candidates statement planned on the counts kept for its selection's sample
    (sample.py), before the statement that reads the sample's fingerprint has confirmed them:
    the turn sends both in one round trip (backend/chat/catalog.py). Its rows are the search's
    only when the confirmed counts are `counts` (`search(prefetched=...)`): then the search
    would have sent this very statement."""

    query: str
    stems: list[str]
    counts: Counts
    plan: _Plan
    sql: str


def prefetch(
    dialect: str, where: Where, query: str, terms: list[QueryTerm], counts_query: CountsQuery
) -> Prefetch | None:
    """The candidates statement of a search for `query` (its `terms`, whose stems
    `counts_query` counts) on the counts `counts_query` holds (a stem a full sample misses
    counted as its kept probe answer says, else as in no row: what a probe answers most
    often). None without kept counts, or when no stem is in the sample."""
    known = counts_query.known
    stems = counts_query.stems
    if known is None or not terms:
        return None
    df = {s: min(known.df.get(s, 0), DF_CAP) or int(known.probes.get(s, False)) for s in stems}
    counts = Counts(min(known.rows, ROWS_CAP), df)
    plan = _plan(terms, stems, counts)
    if plan is None:
        return None
    return Prefetch(query, stems, counts, plan, plan.sql(dialect, where))


async def search(
    session: AsyncSession,
    source: SkillSource,
    query: str,
    *,
    limit: int,
    threshold: float,
    counts: Counts | None = None,
    rerank: SemanticRanker | None = None,
    prefetched: tuple[Prefetch, Sequence[Any]] | None = None,
) -> list[SearchHit]:
    """The skills of `source` that fit `query`, best first, each scoring at least `threshold`;
    with `rerank`, its best lexical matches ordered semantically (semantic.py).

    `counts`: the request's `Counts`, made by the caller in this transaction (`CountsQuery`
    over `request_stems(query_terms(query))`) in a statement that on PostgreSQL selects
    `GIN_ONLY` too: the turn's catalog query does it all in one step. `prefetched`: a
    `Prefetch` for `query` and the rows its statement read, used when its counts are
    `counts`."""
    ahead = prefetched[0] if prefetched is not None and prefetched[0].query == query else None
    terms = ahead.plan.terms if ahead is not None else query_terms(query)
    if not terms or limit <= 0:
        return []
    stems = ahead.stems if ahead is not None else request_stems(terms)
    dialect = session.get_bind().dialect.name
    where = where_sql(session, source)
    if counts is None or counts.df.keys() != set(stems):
        counts = await _counts(session, dialect, where, stems)
    if ahead is not None and prefetched is not None and ahead.counts == counts:
        plan: _Plan | None = ahead.plan
        rows = prefetched[1]
    else:
        plan = _plan(terms, stems, counts)
        if plan is None:
            return []
        rows = await _rows(session, plan.sql(dialect, where), where)
    assert plan is not None
    n = counts.rows
    marks = _PG_MARKS if dialect == "postgresql" else PRESENCE_MARKS
    scorer = Scorer(terms, term_weights(terms, counts.df, n), plan.present, n, marks)
    scores: dict[str, float] = {}  # candidates often share their flags: score each once
    found = []
    # Rows unpacked, not read by attribute: that costs a microsecond a read, per candidate.
    for kind_id, user_id, namespace, name, description, flags in rows:
        value = scores.get(flags)
        if value is None:
            value = scores[flags] = round(scorer.score(flags), 4)
        if value >= threshold:
            shown = PUBLIC_NAMESPACE if user_id == SYSTEM_USER_ID else namespace
            found.append((-value, name, shown, kind_id, user_id, description))
    # Best first: by score, then name, namespace and id (unique, so nothing after is compared).
    best = heapq.nsmallest(limit if rerank is None else max(limit, rerank.candidates), found)
    hits = [SearchHit(k, u, ns, name, d, -negative) for negative, name, ns, k, u, d in best]
    if rerank is not None:
        return (await rerank.rerank(query, hits))[:limit]
    return hits
