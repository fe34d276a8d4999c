"""A turn costs the same at any catalog size (issue 12): `python -m bench.catalog`.

On real PostgreSQL: one Ghost that selects 10,000 skills (variants of the corpus's skills, or of
the fixture skills without the corpus) beside one that selects 10, side by side:

- prompt tokens per model call of the same scripted turn (load the best-matching skill, answer),
  counted with the cl100k tokenizer: ratio <= 1.1;
- turn preparation (`TurnRunner.prepare`: history, Ghost, catalog, secrets) timed in alternating
  pairs: median ratio <= 1.5;
- search latency over the 10,000: p95 of the search `search_skills` uses against p95 of a bare
  SQL full-text query over the same rows (the same terms OR-ed, `ts_rank`, top 5): <= 1.5.

Prints `RESULT catalog tokens_ratio=... prep_ratio=... search_p95_ratio=...`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from langchain_core.messages import AIMessage
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.auth import service as auth_service
from backend.chat import conversations
from backend.chat.transport import LocalTransport
from backend.chat.turns import PreparedTurn, TurnRunner
from backend.config import Settings
from backend.crd.ghost import GhostSpec
from backend.db.engine import create_engine, create_sessionmaker
from backend.ghosts import service as ghosts
from backend.kinds.store import Scope
from backend.skills.folder import zip_folder
from backend.skills.package import read_package
from backend.skills.search.engine import search
from backend.skills.search.selection import GhostSkills
from backend.skills.search.text import query_terms
from bench._util import compare
from bench.tokens import prompt_tokens
from chat_shell.agent import run_turn
from chat_shell.offline import RecordedCall, ScriptedChatModel
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from tests.support import corpus, services
from tests.support.search_catalog import write_skills
from tests.support.search_eval import load_queries

LARGE, SMALL = 10_000, 10
MESSAGE = "Here is the transcript of our planning call: write minutes with owners and due dates."
BATCH = 500


def base_skills() -> list[dict[str, Any]]:
    """Skill CRDs of the fixture skills, then of the corpus (every source) when it is here."""
    manifests = sorted(corpus.FIXTURE_SKILLS.glob("*/SKILL.md"))
    if corpus.is_present():
        manifests += sorted(corpus.location().glob("*/*/SKILL.md"))
    crds = []
    for manifest in manifests:
        package = read_package(zip_folder(manifest.parent))
        crds.append(package.to_crd().model_dump(mode="json", exclude_none=True))
    return crds


def variant(base: dict[str, Any], i: int, vocabulary: Sequence[str], rng: random.Random) -> Any:
    """A distinct skill from a base: its own name, its description about two more topics, and
    its own instructions (a sample of the base's lines and a few more topic words)."""
    crd = {**base, "metadata": {**base["metadata"]}, "spec": {**base["spec"]}}
    crd["metadata"]["name"] = f"{base['metadata']['name'][:50]}-{i}"
    extra = " and ".join(rng.sample(vocabulary, 2))
    crd["spec"]["description"] = f"{base['spec']['description']} Also covers {extra}."
    lines = base["spec"].get("prompt", "").splitlines()
    kept = [line for line in lines if rng.random() < 0.5]
    crd["spec"]["prompt"] = "\n".join([*kept, " ".join(rng.sample(vocabulary, 5))])
    return crd


async def populate(
    sessionmaker: async_sessionmaker[AsyncSession], scope: Scope, count: int, seed: int
) -> None:
    """`count` skills in `scope`, written as the skill service writes them (row, index)."""
    rng = random.Random(seed)
    bases = base_skills()
    vocabulary = sorted(
        {w for b in bases for w in b["spec"].get("prompt", "").split() if w.isalpha()}
    )
    async with sessionmaker() as session:
        for start in range(0, count, BATCH):
            crds = [
                variant(bases[i % len(bases)], i, vocabulary, rng)
                for i in range(start, min(count, start + BATCH))
            ]
            await write_skills(session, scope, crds)
        await session.commit()
        # The steady state autovacuum keeps: statistics, visibility map, GIN pending list merged.
        connection = await session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        await connection.execute(text("VACUUM ANALYZE"))


async def ghost_turn(
    sessionmaker: async_sessionmaker[AsyncSession], user_id: int, namespace: str
) -> tuple[str, int]:
    """A Ghost selecting every skill of `namespace`, and a conversation with one user message."""
    body = {
        "metadata": {"name": "helper"},
        "spec": {"systemPrompt": "You help.", "skillSelector": {}},
    }
    async with sessionmaker() as session:
        await ghosts.create(session, Scope(user_id, namespace), body, caller_id=user_id)
        conversation = await conversations.create(session, user_id, f"{namespace}/helper", "bench")
        message_id = await conversations.add_user_message(
            session, user_id, conversation.id, MESSAGE
        )
        await session.commit()
        return conversation.id, message_id


async def tokens_per_call(
    runner: TurnRunner, conversation: str, message: int, target: str
) -> tuple[float, bool]:
    """Prompt tokens per model call of a turn that loads `target`, then answers."""
    prepared = await runner.prepare(conversation, message)
    assert isinstance(prepared, PreparedTurn)
    request = prepared.request
    call = {"name": "load_skill", "args": {"skill_name": target}, "id": "call_1"}
    model = ScriptedChatModel(script=[AIMessage(content="", tool_calls=[call]), AIMessage("Done.")])
    events = [
        e
        async for e in run_turn(
            request,
            skills=prepared.directory,
            package_source=InMemoryPackageSource(),
            frontend=InMemoryFrontendChannel(),
            model=model,
        )
    ]
    assert events[-1].type == "done", events[-1]
    calls: list[RecordedCall] = model.calls
    return prompt_tokens(calls) / len(calls), request.skill_search


def bare_query(stems: Sequence[str]) -> Any:
    query = " | ".join(f"'{s}'" for s in stems)
    return text(
        "SELECT kind_id, name FROM skill_search WHERE document @@ to_tsquery('simple', :q) "
        "ORDER BY ts_rank(document, to_tsquery('simple', :q)) DESC LIMIT 5"
    ).bindparams(q=query)


async def search_latency(
    sessionmaker: async_sessionmaker[AsyncSession], source: GhostSkills, rounds: int
) -> tuple[float, float]:
    """p95 of the search and of the bare full-text query, timed in alternating pairs (ms)."""
    queries = [q.text for q in load_queries() if q.expect]
    mine: list[float] = []
    bare: list[float] = []
    async with sessionmaker() as session:
        for k in range(rounds):
            for query in queries:
                stems = sorted({s for t in query_terms(query) for s in t.all_stems})
                if not stems:
                    continue
                order = (0, 1) if k % 2 == 0 else (1, 0)
                for which in order:
                    started = time.perf_counter()
                    if which == 0:
                        await search(session, source, query, limit=5, threshold=0.25)
                    else:
                        (await session.execute(bare_query(stems))).all()
                    (mine if which == 0 else bare).append(time.perf_counter() - started)
    p95 = lambda xs: statistics.quantiles(xs, n=20)[-1] * 1000  # noqa: E731
    return p95(mine), p95(bare)


async def run(pairs: int, rounds: int) -> None:
    admin_url, pg = services.start_postgres()
    services.prepare_postgres_template(admin_url)
    try:
        with services.postgres_database(admin_url) as url, tempfile.TemporaryDirectory() as d:
            settings = Settings(database_url=url, data_dir=Path(d))
            engine = create_engine(url)
            sessionmaker = create_sessionmaker(engine)
            try:
                async with sessionmaker() as session:
                    user = await auth_service.create_user(session, "bench")
                    await session.commit()
                await populate(sessionmaker, Scope(user.id, "large"), LARGE, seed=1)
                # The same seed: the 10 are the first 10 of the 10,000, identical.
                await populate(sessionmaker, Scope(user.id, "small"), SMALL, seed=1)
                large = await ghost_turn(sessionmaker, user.id, "large")
                small = await ghost_turn(sessionmaker, user.id, "small")
                runner = TurnRunner(
                    sessionmaker=sessionmaker,
                    settings=settings,
                    cipher=Fernet(Fernet.generate_key()),
                    package_source=InMemoryPackageSource(),
                    transport=LocalTransport(),
                )
                # Both turns load the same skill: the 10-skill Ghost's best match.
                async with sessionmaker() as session:
                    small_source = GhostSkills.from_spec(
                        Scope(user.id, "small"), GhostSpec.model_validate({"skillSelector": {}})
                    )
                    best = await search(session, small_source, MESSAGE, limit=1, threshold=0)
                target = best[0].name
                large_tokens, large_search = await tokens_per_call(runner, *large, target)
                small_tokens, small_search = await tokens_per_call(runner, *small, target)
                assert large_search and not small_search
                prep = await compare(
                    lambda: runner.prepare(*large), lambda: runner.prepare(*small), pairs=pairs
                )
                source = GhostSkills.from_spec(
                    Scope(user.id, "large"), GhostSpec.model_validate({"skillSelector": {}})
                )
                mine, bare = await search_latency(sessionmaker, source, rounds)
            finally:
                await engine.dispose()
    finally:
        if pg is not None:
            pg.cleanup()
    where = f"the corpus at {corpus.location()} and " if corpus.is_present() else ""
    print(f"base skills: {len(base_skills())} from {where}the fixture skills")
    tokens_ratio = large_tokens / small_tokens
    search_ratio = mine / bare
    print(
        f"prompt tokens per model call: {LARGE:,} skills {large_tokens:,.0f} (compact catalog + "
        f"search_skills), {SMALL} skills {small_tokens:,.0f}: ratio {tokens_ratio:.2f} (<= 1.1)"
    )
    print(
        f"turn preparation: {prep.candidate_ms:.2f} ms vs {prep.baseline_ms:.2f} ms, median ratio "
        f"{prep.median_ratio:.2f} over {pairs} pairs (<= 1.5)"
    )
    print(
        f"search p95 {mine:.2f} ms vs bare full-text query p95 {bare:.2f} ms over {LARGE:,} rows: "
        f"ratio {search_ratio:.2f} (<= 1.5)"
    )
    print(
        f"RESULT catalog tokens_ratio={tokens_ratio:.3f} prep_ratio={prep.median_ratio:.3f} "
        f"search_p95_ratio={search_ratio:.3f}"
    )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=200, help="turn preparation timing pairs")
    parser.add_argument("--rounds", type=int, default=5, help="passes over the labelled requests")
    args = parser.parse_args()
    asyncio.run(run(args.pairs, args.rounds))


if __name__ == "__main__":
    cli()
