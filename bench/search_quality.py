"""Search quality over the labelled requests (issue 12): recall@1, recall@5, MRR, no-match rate.

    python -m bench.search_quality [--database-url URL] [--threshold X] [--show]

Uploads the corpus's skills and the fixture skills (the fixture skills alone without the
corpus; tests/support/corpus.py says where it is) into a fresh database, SQLite in a temporary
folder unless a URL is given, then runs every request of tests/fixtures/search_queries.yaml
through the search the agent uses. `--show` prints what each request found.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from backend.auth import service as auth_service
from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.migrate import upgrade
from tests.support import corpus
from tests.support.search_eval import load_queries, measure, skill_folders, upload


async def run(database_url: str, threshold: float | None, show: bool) -> None:
    settings = Settings(database_url=database_url)
    upgrade(database_url)
    engine = create_engine(database_url)
    sessionmaker = create_sessionmaker(engine)
    try:
        async with sessionmaker() as session:
            user = await auth_service.create_user(session, "quality")
            await session.commit()
            folders = skill_folders(use_corpus=corpus.is_present())
            stored = await upload(session, settings, user.id, folders)
            cut = settings.skill_search_threshold if threshold is None else threshold
            quality = await measure(session, user.id, load_queries(), stored, threshold=cut)
    finally:
        await engine.dispose()
    source = corpus.location() if corpus.is_present() else corpus.FIXTURE_SKILLS
    print(f"skills: {len(folders)} from {source}{'' if corpus.is_present() else ' (fallback)'}")
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(folder) / 'quality.db'}"
        asyncio.run(run(url, args.threshold, args.show))


if __name__ == "__main__":
    cli()
