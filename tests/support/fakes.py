"""Fakes and builders for chat_shell tests: a scripted tool-calling model, skill ZIPs, turns."""

from __future__ import annotations

import io
import itertools
import zipfile
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from chat_shell.agent import run_turn
from chat_shell.contracts import DoneEvent, Event, HistoryMessage, SkillSpec, TurnRequest
from chat_shell.net import EgressPolicy
from chat_shell.offline import ScriptedChatModel
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource, PackageSource
from chat_shell.skills.registry import ProviderRegistry

_ids = itertools.count()

# The test servers listen on loopback, which the egress policy refuses unless allowed.
LOOPBACK = EgressPolicy(allow=("127.0.0.1",))


FakeToolChatModel = ScriptedChatModel  # the fake tool-calling model of the tests


def say(text: str) -> AIMessage:
    return AIMessage(content=text)


def call(name: str, /, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{next(_ids)}"}])


def load(skill: str) -> AIMessage:
    return call("load_skill", skill_name=skill)


def skill(name: str, description: str = "", prompt: str = "", **fields: Any) -> SkillSpec:
    return SkillSpec(
        name=name,
        description=description or f"Does {name} things.",
        prompt=prompt or f"Instructions of {name}.",
        **fields,
    )


def request(user_message: str = "hi", **fields: Any) -> TurnRequest:
    return TurnRequest(conversation_id="conv-1", user_id=7, user_message=user_message, **fields)


def skill_zip(root: str, files: dict[str, str], manifest: str = "---\nname: x\n---\n") -> bytes:
    """A skill package: `root/SKILL.md` plus `files` (paths relative to the root)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{root}/SKILL.md", manifest)
        for path, text in files.items():
            archive.writestr(f"{root}/{path}", text)
    return buffer.getvalue()


async def collect(
    turn: TurnRequest,
    model: BaseChatModel,
    *,
    source: PackageSource | None = None,
    frontend: InMemoryFrontendChannel | None = None,
    providers: ProviderRegistry | None = None,
) -> list[Event]:
    return [
        event
        async for event in run_turn(
            turn,
            package_source=source or InMemoryPackageSource(),
            frontend=frontend or InMemoryFrontendChannel(),
            model=model,
            providers=providers or ProviderRegistry(),
        )
    ]


def of_type(events: Sequence[Event], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def done(events: Sequence[Event]) -> DoneEvent:
    assert events[-1].type == "done", events[-1]
    assert isinstance(events[-1], DoneEvent)
    return events[-1]


def next_history(
    history: list[HistoryMessage], user_message: str, events: Sequence[Event]
) -> list[HistoryMessage]:
    """History after a turn, as backend persists it (loaded skills on the assistant message)."""
    final = done(events)
    return [
        *history,
        HistoryMessage(role="user", content=user_message),
        HistoryMessage(
            role="assistant",
            content=final.text,
            tool_calls=final.tool_calls,
            loaded_skills=final.loaded_skills,
        ),
    ]
