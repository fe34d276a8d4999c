"""What lazy skill loading saves, and what the engine costs (issue 4).

    python -m bench.tokens [--corpus DIR]

DIR holds skill folders; by default the corpus's `anthropics-skills` (tests/support/corpus.py
says where the corpus is), or the repository's fixture skills when there is no corpus.

Scripted 10-turn conversations with a fake model (each turn: a `load_skill` call, then the
answer) against a Ghost holding every corpus skill, in two scenarios: *switching* (turn k needs
the k-th skill in name order) and *focused* (the first four skills, three consecutive turns each).
Three ways: *static* (every body in the system prompt), *lazy* (this engine, default settings),
*preload* (this engine, the first two skills preloaded). It counts the cl100k tokens of what the
model actually received on every call (system prompt, messages, tool calls, tool schemas).
Then it times one turn of this engine against a bare `create_agent` with the same tools and the
same instant fake model, side by side (`overhead_ratio`, target <= 1.5).

*large* (issue 12): the switching scenario with 1,000 skills (variants of the corpus skills)
against the same turns with 10 of them, in tokens per model call. Over its catalog budget a
Ghost's prompt lists a compact catalog (recently used skills and the best matches for the
message, as backend builds it) and the model gets `search_skills`; target <= 1.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool

from backend.skills.folder import zip_folder
from backend.skills.package import read_package
from bench._util import compare, count_tokens
from chat_shell.agent import run_turn
from chat_shell.contracts import CatalogEntry, DoneEvent, HistoryMessage, SkillSpec, TurnRequest
from chat_shell.offline import RecordedCall, ScriptedChatModel
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource, InMemorySkillDirectory
from chat_shell.skills import ProviderRegistry
from chat_shell.skills.active import last_loaded_records
from chat_shell.skills.prompt import render_stable_prompt, render_system_prompt
from tests.support import corpus as corpus_location

GHOST_PROMPT = "You are a helpful assistant for a product team. Answer precisely."
TURNS = 10
PRELOADED = 2  # the first skills in name order
TARGETS = {"switching": 0.20, "focused": 0.15}
LARGE, SMALL = 1000, 10
COMPACT_MATCHES = 5  # as backend/chat/catalog.py


def load_corpus(root: Path) -> list[SkillSpec]:
    """Every skill folder under root (`*/SKILL.md`), read as an upload would be: name,
    description and body."""
    skills = []
    for manifest in sorted(root.glob("*/SKILL.md")):
        package = read_package(zip_folder(manifest.parent))
        skills.append(
            SkillSpec(
                name=package.name, description=package.spec.description, prompt=package.spec.prompt
            )
        )
    return sorted(skills, key=lambda s: s.name)


def scenarios(names: Sequence[str]) -> dict[str, list[str]]:
    """Which skill each of the turns needs."""
    return {
        "switching": [names[k % len(names)] for k in range(TURNS)],
        "focused": [names[k // 3] for k in range(TURNS)],
    }


def turn_script(skill: str) -> list[AIMessage]:
    call = {"name": "load_skill", "args": {"skill_name": skill}, "id": f"call_{skill}"}
    answer = f"Here is the result of your {skill} task, following the skill's instructions."
    return [AIMessage(content="", tool_calls=[call]), AIMessage(content=answer)]


def user_message(k: int, skill: str) -> str:
    return f"Turn {k + 1}: please help me with a task that needs {skill}."


def prompt_tokens(calls: Sequence[RecordedCall]) -> int:
    total = 0
    for call in calls:
        total += sum(count_tokens(m.text) for m in call.messages)
        for message in call.messages:
            for tool_call in getattr(message, "tool_calls", []):
                total += count_tokens(json.dumps(tool_call["args"]))
        total += count_tokens(json.dumps(call.tools, sort_keys=True))
    return total


async def run_engine(
    skills: list[SkillSpec], plan: list[str], preload: Sequence[str] = ()
) -> list[RecordedCall]:
    history: list[HistoryMessage] = []
    calls: list[RecordedCall] = []
    for k, skill in enumerate(plan):
        model = ScriptedChatModel(script=turn_script(skill))
        turn = TurnRequest(
            conversation_id="bench",
            user_id=1,
            system_prompt=GHOST_PROMPT,
            skills=skills,
            preload_skills=list(preload),
            history=history,
            user_message=user_message(k, skill),
        )
        events = [e async for e in run_turn(turn, **_ports(), model=model)]
        done = events[-1]
        assert isinstance(done, DoneEvent), done
        history = [
            *history,
            HistoryMessage(role="user", content=turn.user_message),
            HistoryMessage(role="assistant", content=done.text, loaded_skills=done.loaded_skills),
        ]
        calls += model.calls
    return calls


def many(skills: list[SkillSpec], count: int) -> list[SkillSpec]:
    """`count` distinct skills: the given ones, then numbered copies of them."""
    out = list(skills)
    for i in range(count - len(skills)):
        base = skills[i % len(skills)]
        out.append(base.model_copy(update={"name": f"{base.name}-v{i}"}))
    return out[:count]


async def run_searching(skills: list[SkillSpec], plan: list[str]) -> list[RecordedCall]:
    """Like `run_engine`, with a compact catalog and `search_skills` over all of `skills`."""
    directory = InMemorySkillDirectory(skills)
    by_name = {s.name: s for s in skills}
    history: list[HistoryMessage] = []
    calls: list[RecordedCall] = []
    for k, skill in enumerate(plan):
        message = user_message(k, skill)
        recent = [by_name[r.name] for r in last_loaded_records(history)]
        matches = await directory.search(message, COMPACT_MATCHES)
        catalog = {s.name: CatalogEntry(name=s.name, description=s.description) for s in recent}
        for m in matches:
            catalog.setdefault(m.name, CatalogEntry(name=m.name, description=m.description))
        model = ScriptedChatModel(script=turn_script(skill))
        turn = TurnRequest(
            conversation_id="bench",
            user_id=1,
            system_prompt=GHOST_PROMPT,
            skills=recent,
            catalog=list(catalog.values()),
            skill_search=True,
            history=history,
            user_message=message,
        )
        events = [e async for e in run_turn(turn, **_ports(), model=model, skills=directory)]
        done = events[-1]
        assert isinstance(done, DoneEvent), done
        history = [
            *history,
            HistoryMessage(role="user", content=turn.user_message),
            HistoryMessage(role="assistant", content=done.text, loaded_skills=done.loaded_skills),
        ]
        calls += model.calls
    return calls


async def large_ratio(skills: list[SkillSpec]) -> tuple[float, float, float]:
    """(tokens per call with LARGE skills and search, with SMALL skills, their ratio)."""
    small = many(skills, SMALL)
    plan = scenarios([s.name for s in small])["switching"]
    with_small = await run_engine(small, plan)
    with_large = await run_searching(many(skills, LARGE), plan)
    per_small = prompt_tokens(with_small) / len(with_small)
    per_large = prompt_tokens(with_large) / len(with_large)
    return per_large, per_small, per_large / per_small


def _ports() -> dict[str, Any]:
    return {
        "package_source": InMemoryPackageSource(),
        "frontend": InMemoryFrontendChannel(),
        "providers": ProviderRegistry(),
    }


def bare_load_skill(skills: list[SkillSpec]) -> BaseTool:
    """A load_skill with the engine's schema that only confirms (the static prompt has it all)."""
    schema = {
        "type": "object",
        "properties": {"skill_name": {"type": "string", "enum": [s.name for s in skills]}},
        "required": ["skill_name"],
    }

    async def confirm(skill_name: str) -> str:
        return f"Skill {skill_name!r} loaded."

    return StructuredTool(
        name="load_skill", description="Load a skill.", args_schema=schema, coroutine=confirm
    )


async def run_static(skills: list[SkillSpec], plan: list[str]) -> list[RecordedCall]:
    model = ScriptedChatModel()
    agent = create_agent(
        model,
        tools=[bare_load_skill(skills)],
        system_prompt=render_system_prompt(GHOST_PROMPT, skills),
    )
    messages: list[Any] = []
    for k, skill in enumerate(plan):
        model.script.extend(turn_script(skill))
        messages.append(HumanMessage(user_message(k, skill)))
        state = await agent.ainvoke({"messages": messages})
        messages.append(AIMessage(state["messages"][-1].text))  # history keeps the final text
    return model.calls


async def time_one_turn(skills: list[SkillSpec], pairs: int) -> tuple[float, float, float]:
    skill = skills[0].name
    turn = TurnRequest(
        conversation_id="bench",
        user_id=1,
        system_prompt=GHOST_PROMPT,
        skills=skills,
        user_message=user_message(0, skill),
    )
    engine_model = ScriptedChatModel(script=turn_script(skill), cycle=True, record=False)
    bare_model = ScriptedChatModel(script=turn_script(skill), cycle=True, record=False)
    bare = create_agent(
        bare_model,
        tools=[bare_load_skill(skills)],
        system_prompt=render_stable_prompt(GHOST_PROMPT, skills),
    )
    ports = _ports()

    async def engine_turn() -> None:
        async for _ in run_turn(turn, **ports, model=engine_model):
            pass

    async def bare_streamed() -> None:
        async for _ in bare.astream(
            {"messages": [HumanMessage(turn.user_message)]}, stream_mode="messages"
        ):
            pass

    async def bare_invoked() -> None:
        await bare.ainvoke({"messages": [HumanMessage(turn.user_message)]})

    streamed = await compare(engine_turn, bare_streamed, pairs=pairs)
    invoked = await compare(engine_turn, bare_invoked, pairs=pairs)
    return streamed.median_ratio, invoked.median_ratio, streamed.candidate_ms


async def main(corpus: Path | None, pairs: int) -> None:
    fallback = False
    if corpus is None:
        corpus, fallback = corpus_location.bench_folder("anthropics-skills")
    skills = load_corpus(corpus)
    print(corpus_location.describe(corpus, len(skills), fallback=fallback))
    if fallback:
        print("(the fixture skills are tiny: the token targets are meant for real skills)")
    fractions: dict[str, float] = {}
    for name, plan in scenarios([s.name for s in skills]).items():
        static = prompt_tokens(await run_static(skills, plan))
        lazy = prompt_tokens(await run_engine(skills, plan))
        preloaded = [s.name for s in skills[:PRELOADED]]
        preload = prompt_tokens(await run_engine(skills, plan, preload=preloaded))
        fractions[name] = lazy / static
        verdict = "ok" if fractions[name] <= TARGETS[name] else "MISSED"
        print(
            f"{name:9}  static={static:>9,}  lazy={lazy:>8,} ({lazy / static:6.1%})  "
            f"preload={preload:>8,} ({preload / static:6.1%})  "
            f"target lazy <= {TARGETS[name]:.0%}: {verdict}"
        )
    per_large, per_small, large = await large_ratio(skills)
    print(
        f"large      {LARGE:,} skills {per_large:,.0f} tokens per call (compact catalog + "
        f"search_skills) vs {SMALL} skills {per_small:,.0f}: {large:.2f}x (target <= 1.1)"
    )
    streamed, invoked, engine_ms = await time_one_turn(skills, pairs)
    print(
        f"one turn: engine {engine_ms:.2f} ms; median ratio vs bare create_agent streaming "
        f"{streamed:.2f}x, vs bare ainvoke {invoked:.2f}x ({pairs} pairs each; target <= 1.5x)"
    )
    print(
        f"RESULT tokens switching={fractions['switching']:.3f} "
        f"focused={fractions['focused']:.3f} overhead_ratio={streamed:.2f} large={large:.3f}"
    )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        type=Path,
        help="a folder of skill folders (default: the corpus's anthropics-skills, else "
        "the fixture skills in tests/fixtures/skills)",
    )
    parser.add_argument("--pairs", type=int, default=300, help="timing pairs per comparison")
    args = parser.parse_args()
    asyncio.run(main(args.corpus, args.pairs))


if __name__ == "__main__":
    cli()
