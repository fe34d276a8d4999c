"""How a search scores a candidate (engine.py's module docstring explains the formula): IDF-weighted
coverage of the request's terms, each credited at the weight of the best field holding it, times
the evidence the matched mass gives."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from backend.skills.search.text import EXPANSION_WEIGHT, QueryTerm

FIELD_WEIGHTS = (
    ("name_terms", 1.0),
    ("tag_terms", 0.8),
    ("when_terms", 0.8),
    ("desc_terms", 0.7),
    ("body_terms", 0.35),
)
EVIDENCE_HALF = 0.5  # evidence is 1/2 at this many rarest-term units of matched mass


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency (always positive)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def term_weights(terms: Sequence[QueryTerm], df: Mapping[str, int], n: int) -> list[float]:
    weights = []
    for term in terms:
        seen = df.get(term.stem, 0) or max((df.get(a, 0) for a in term.alternatives), default=0)
        weights.append(idf(seen, n))
    return weights


# How each field of `FIELD_WEIGHTS` shows in a candidate's flags: the block of `len(stems)`
# characters that tests it, and the character there that marks a stem the field holds.
FieldMarks = Sequence[tuple[int, str]]
PRESENCE_MARKS: FieldMarks = tuple((i, "1") for i in range(len(FIELD_WEIGHTS)))


class Scorer:
    """The score of each candidate of one request, from its flags (see the module).

    Built once per request: for each term, the flag positions that would give it credit, best
    credit first, so scoring a row is a few lookups per term."""

    def __init__(
        self,
        terms: Sequence[QueryTerm],
        weights: Sequence[float],
        stems: Sequence[str],
        n: int,
        marks: FieldMarks = PRESENCE_MARKS,
    ) -> None:
        """`marks`: for each field of `FIELD_WEIGHTS`, which block of `len(stems)` flags holds
        its tests and which character there says the field holds the stem (`PRESENCE_MARKS`:
        a block of `0`/`1` per field)."""
        position = {stem: j for j, stem in enumerate(stems)}
        width = len(stems)
        # Fields sharing a mark share a test: only the best of them can credit a stem.
        fields: dict[tuple[int, str], float] = {}
        for (block, mark), (_, field_weight) in zip(marks, FIELD_WEIGHTS, strict=True):
            fields[block, mark] = max(field_weight, fields.get((block, mark), 0.0))
        self._terms: list[tuple[float, list[tuple[float, int, str]]]] = []
        for term, weight in zip(terms, weights, strict=True):
            credits = [
                (
                    field_weight * (1.0 if stem == term.stem else EXPANSION_WEIGHT),
                    block * width + position[stem],
                    mark,
                )
                for (block, mark), field_weight in fields.items()
                for stem in term.all_stems
                if stem in position
            ]
            credits.sort(key=lambda c: -c[0])
            self._terms.append((weight, credits))
        self._total = sum(weights)
        self._unit = idf(0, n)

    def coverage(self, flags: str) -> float:
        """The IDF-weighted share of the request's terms the row covers, in [0, 1]."""
        if self._total <= 0:
            return 0.0
        got = 0.0
        for weight, credits in self._terms:
            for credit, index, mark in credits:
                if flags[index] == mark:
                    got += weight * credit
                    break
        return got / self._total

    def score(self, flags: str) -> float:
        share = self.coverage(flags)
        units = share * self._total / self._unit
        return math.sqrt(share * units / (units + EVIDENCE_HALF))
