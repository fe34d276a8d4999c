"""The two flag layouts score alike: SQLite's 0/1 block per field and PostgreSQL's best weight
per stem (engine._PG_MARKS) give a candidate holding the same words in the same fields the same
score."""

from __future__ import annotations

import random

from backend.skills.search import candidates, engine
from backend.skills.search.condition import Where
from backend.skills.search.scoring import FIELD_WEIGHTS, Scorer, term_weights
from backend.skills.search.text import query_terms

REQUEST = "convert the spreadsheet of meeting minutes to a chart with owners and due dates"


def _flags(holds: list[set[int]]) -> tuple[str, str]:
    """SQLite's and PostgreSQL's flags of a row where stem j is in the fields `holds[j]`."""
    presence = "".join(
        "1" if field in fields else "0" for field in range(len(FIELD_WEIGHTS)) for fields in holds
    )
    weights = candidates.PG_FIELD_WEIGHTS
    best = "".join(min((weights[f] for f in fields), default="0") for fields in holds)
    return presence, best


def test_presence_and_best_weight_flags_score_alike() -> None:
    terms = query_terms(REQUEST)
    stems = engine.request_stems(terms)
    rng = random.Random(7)
    df = {s: rng.randint(1, 90) for s in stems}
    weights = term_weights(terms, df, 500)
    sqlite = Scorer(terms, weights, stems, 500)
    postgres = Scorer(terms, weights, stems, 500, engine._PG_MARKS)
    seen = set()
    for _ in range(500):
        holds = [{f for f in range(len(FIELD_WEIGHTS)) if rng.random() < 0.25} for _ in stems]
        presence, best = _flags(holds)
        assert sqlite.score(presence) == postgres.score(best), (presence, best)
        seen.add(round(sqlite.score(presence), 4))
    assert len(seen) > 50  # the rows differ: the comparison is not of one score


def test_a_stem_is_credited_by_its_best_field_only() -> None:
    terms = query_terms("spreadsheet")
    stems = engine.request_stems(terms)
    weights = term_weights(terms, dict.fromkeys(stems, 5), 500)
    postgres = Scorer(terms, weights, stems, 500, engine._PG_MARKS)
    at = stems.index(terms[0].stem)

    def only(weight: str) -> str:
        return "".join(weight if j == at else "0" for j in range(len(stems)))

    in_name, in_body = postgres.score(only("A")), postgres.score(only("D"))
    assert in_name > in_body > 0
    assert postgres.score("0" * len(stems)) == 0


def test_exact_counts_rank_every_match_of_the_pool_a_sample_fewer() -> None:
    """From exact counts the pool's matches are known and all ranked; from a sample's counts
    they are some of many more, and a smaller share is ranked (candidates.SAMPLED_RANK_POOL)."""
    terms = query_terms("write the minutes of a planning call")
    stems = engine.request_stems(terms)
    df = dict.fromkeys(stems, 60)  # together more than the candidates
    exact = engine._plan(terms, stems, engine.Counts(engine.ROWS_CAP - 1, df))
    sampled = engine._plan(terms, stems, engine.Counts(engine.ROWS_CAP, df))
    few = engine._plan(terms, stems, engine.Counts(candidates.SCORE_ALL, df))
    assert exact is not None and sampled is not None and few is not None
    assert exact.ranked == candidates.RANK_POOL
    assert sampled.ranked == candidates.SAMPLED_RANK_POOL < candidates.RANK_POOL
    assert few.ranked == 0  # every matching row scored
    where = Where("skill_search.user_id = 1", {}, (1,))
    assert f"LIMIT {candidates.SAMPLED_RANK_POOL}) AS pooled" in sampled.sql("postgresql", where)
    assert f"LIMIT {candidates.RANK_POOL}) AS pooled" in exact.sql("postgresql", where)
