"""Search quality over the labelled requests (issue 12): recall@1, recall@5, MRR, no-match rate.

    python -m bench.search_quality [--database-url URL] [--threshold X] [--show]
        [--queries FILE] [--skills DIR [--sample N --seed S]]

Uploads the corpus's skills and the fixture skills (the fixture skills alone without the
corpus; tests/support/corpus.py says where it is) into a fresh database, SQLite in a temporary
folder unless a URL is given, then runs every request of tests/fixtures/search_queries.yaml
(or `--queries`) through the search the agent uses. `--show` prints what each request found.

`--skills DIR` adds another collection (each `DIR/*/SKILL.md` folder, or `--sample N` of them
picked with `--seed`): more skills to tell apart, as a real catalog has. Folders the upload
rejects are counted and left out. tests/fixtures/search_queries_independent.yaml says which
collection its requests were written for.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections import Counter
from pathlib import Path

from backend.auth import service as auth_service
from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.migrate import upgrade
from tests.support import corpus
from tests.support.search_eval import (
    QUERIES,
    extra_folders,
    load_queries,
    measure,
    skill_folders,
    upload,
)


async def run(
    database_url: str,
    threshold: float | None,
    show: bool,
    queries: Path = QUERIES,
    extra: list[tuple[str, Path]] | None = None,
) -> None:
    settings = Settings(database_url=database_url)
    upgrade(database_url)
    engine = create_engine(database_url)
    sessionmaker = create_sessionmaker(engine)
    try:
        async with sessionmaker() as session:
            user = await auth_service.create_user(session, "quality")
            await session.commit()
            user_id = user.id  # a refused upload rolls back, which expires `user`
            folders = skill_folders(use_corpus=corpus.is_present())
            stored = await upload(session, settings, user_id, folders)
            rejected: list[tuple[str, str]] = []
            if extra:
                stored |= await upload(session, settings, user_id, extra, rejected=rejected)
            cut = settings.skill_search_threshold if threshold is None else threshold
            labelled = load_queries(queries)
            quality = await measure(session, user_id, labelled, stored, threshold=cut)
    finally:
        await engine.dispose()
    source = corpus.location() if corpus.is_present() else corpus.FIXTURE_SKILLS
    print(f"skills: {len(folders)} from {source}{'' if corpus.is_present() else ' (fallback)'}")
    if extra:
        codes = Counter(code for _, code in rejected)
        refused = ", ".join(f"{code} {n}" for code, n in sorted(codes.items())) or "none"
        print(
            f"more skills: {len(extra) - len(rejected)} of {len(extra)} from {extra[0][1].parent} "
            f"(rejected by the upload: {refused})"
        )
    print(f"requests: {queries}")
    if show:
        for text, found in quality.results.items():
            print(f"  {text!r}: {', '.join(f'{n} {s:.2f}' for n, s in found) or '-'}")
        for text in quality.misses:
            print(f"  MISS {text!r}")
    print(
        f"RESULT search_quality recall_at_1={quality.recall_at_1:.3f} "
        f"recall_at_5={quality.recall_at_5:.3f} mrr={quality.mrr:.3f} "
        f"no_match_suggested={quality.no_match_rate:.3f} threshold={cut}"
    )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="an empty database (default: a temporary SQLite)")
    parser.add_argument("--threshold", type=float, help="score threshold (default: the setting)")
    parser.add_argument("--show", action="store_true", help="print each request's results")
    parser.add_argument("--queries", type=Path, default=QUERIES, help="labelled requests (YAML)")
    parser.add_argument("--skills", type=Path, help="a folder of more skill folders to search")
    parser.add_argument("--sample", type=int, help="with --skills: this many of them, at random")
    parser.add_argument("--seed", type=int, default=0, help="with --sample: the random seed")
    args = parser.parse_args()
    extra = None
    if args.skills is not None:
        extra = extra_folders(args.skills, sample=args.sample, seed=args.seed)
        if not extra:
            parser.error(f"no skill folders (*/SKILL.md) under {args.skills}")
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(folder) / 'quality.db'}"
        asyncio.run(run(url, args.threshold, args.show, args.queries, extra))


if __name__ == "__main__":
    cli()
