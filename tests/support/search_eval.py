"""The labelled search requests (tests/fixtures/search_queries.yaml) and the measures over them.

Used by the search-quality test and by `python -m bench.search_quality`. The skills are the
corpus's and the fixture skills when the corpus is here, else the fixture skills alone; each
source goes into its own namespace of one user, uploaded through the normal write path.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.errors import SkillhiveError
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.folder import zip_folder
from backend.skills.search.engine import SearchHit, search
from backend.skills.search.selection import ReadableSkills
from tests.support import corpus

QUERIES = corpus.REPO / "tests" / "fixtures" / "search_queries.yaml"


@dataclass(frozen=True)
class LabelledQuery:
    text: str
    expect: frozenset[str]  # empty: no skill fits


def load_queries(path: Path = QUERIES) -> list[LabelledQuery]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))["queries"]
    return [
        LabelledQuery(q["q"], frozenset() if q["expect"] == "none" else frozenset(q["expect"]))
        for q in raw
    ]


def skill_folders(*, use_corpus: bool) -> list[tuple[str, Path]]:
    """(namespace, skill folder) of every skill to search over."""
    folders = [("fixtures", m.parent) for m in sorted(corpus.FIXTURE_SKILLS.glob("*/SKILL.md"))]
    if use_corpus:
        for manifest in sorted(corpus.location().glob("*/*/SKILL.md")):
            folders.append((manifest.parent.parent.name, manifest.parent))
    return folders


def extra_folders(
    directory: Path, *, sample: int | None = None, seed: int = 0
) -> list[tuple[str, Path]]:
    """(namespace `extra`, folder) of each skill folder under `directory` (`*/SKILL.md`), or of
    `sample` of them picked at random with `seed`: another collection to search over."""
    names = sorted(m.parent.name for m in directory.glob("*/SKILL.md"))
    if sample is not None and sample < len(names):
        names = random.Random(seed).sample(names, sample)
    return [("extra", directory / name) for name in sorted(names)]


async def upload(
    session: AsyncSession,
    settings: Settings,
    user_id: int,
    folders: Sequence[tuple[str, Path]],
    *,
    rejected: list[tuple[str, str]] | None = None,
) -> set[str]:
    """Upload every folder as the user's skill (each upload commits); the names stored. With
    `rejected`, a folder the upload refuses is noted there (folder name, error code) and the
    others go on; without it the refusal raises."""
    names = set()
    for namespace, folder in folders:
        scope = Scope(user_id, namespace)
        if rejected is None:
            crd = await service.create(session, settings, scope, zip_folder(folder))
        else:
            try:
                crd = await service.create(session, settings, scope, zip_folder(folder))
            except SkillhiveError as error:
                await session.rollback()
                rejected.append((folder.name, error.code))
                continue
        names.add(crd["metadata"]["name"])
    return names


@dataclass
class Quality:
    answerable: int = 0
    top1: int = 0
    top5: int = 0
    reciprocal_ranks: float = 0.0
    no_match: int = 0
    no_match_suggested: int = 0
    misses: list[str] = field(default_factory=list)
    results: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # name, score

    @property
    def recall_at_1(self) -> float:
        return self.top1 / self.answerable if self.answerable else 0.0

    @property
    def recall_at_5(self) -> float:
        return self.top5 / self.answerable if self.answerable else 0.0

    @property
    def mrr(self) -> float:
        return self.reciprocal_ranks / self.answerable if self.answerable else 0.0

    @property
    def no_match_rate(self) -> float:
        """How often a request that fits no skill gets a suggestion anyway."""
        return self.no_match_suggested / self.no_match if self.no_match else 0.0

    def summary(self) -> str:
        return (
            f"recall@1={self.recall_at_1:.3f} recall@5={self.recall_at_5:.3f} mrr={self.mrr:.3f} "
            f"no_match_suggested={self.no_match_rate:.3f} "
            f"({self.answerable} answerable, {self.no_match} no-match requests)"
        )


async def measure(
    session: AsyncSession,
    user_id: int,
    queries: Sequence[LabelledQuery],
    stored: set[str],
    *,
    threshold: float,
) -> Quality:
    quality = Quality()
    for query in queries:
        if query.expect and not query.expect & stored:
            continue  # its skills are not in this run
        hits: list[SearchHit] = await search(
            session, ReadableSkills(user_id), query.text, limit=5, threshold=threshold
        )
        names = [h.name for h in hits]
        quality.results[query.text] = [(h.name, h.score) for h in hits]
        if not query.expect:
            quality.no_match += 1
            quality.no_match_suggested += bool(names)
            continue
        quality.answerable += 1
        rank = next((i for i, n in enumerate(names) if n in query.expect), None)
        if rank is None:
            quality.misses.append(query.text)
            continue
        quality.top1 += rank == 0
        quality.top5 += 1
        quality.reciprocal_ranks += 1 / (rank + 1)
    return quality
