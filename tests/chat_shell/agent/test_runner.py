"""run_turn: event stream shape, errors, limits, cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from chat_shell.agent import run_turn
from chat_shell.contracts import (
    ErrorEvent,
    Event,
    HistoryMessage,
    SkillErrorEvent,
    ToolDeclaration,
)
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from tests.support.agent import ToolsProvider, registry_with
from tests.support.fakes import (
    FakeToolChatModel,
    call,
    collect,
    done,
    load,
    of_type,
    request,
    say,
    skill,
)


async def test_the_callers_notices_follow_start_and_the_turn_goes_on() -> None:
    notice = SkillErrorEvent(skill="gone", code="skill_disabled", message="disabled")
    model = FakeToolChatModel(script=[say("fine")])

    events = await collect(request(notices=[notice]), model)

    assert [e.type for e in events[:2]] == ["start", "skill_error"] and events[1] == notice
    assert done(events).text == "fine"


async def test_a_turn_starts_streams_real_deltas_and_ends_with_done() -> None:
    model = FakeToolChatModel(script=[say("Hello big world")])

    events = await collect(request(), model)

    assert events[0].type == "start" and events[0].turn_index == 0
    assert [e.delta for e in of_type(events, "token")] == ["Hello ", "big ", "world"]
    assert [e.type for e in events].count("done") == 1 and events[-1].type == "done"
    assert done(events).text == "Hello big world"


async def test_usage_is_reported_per_model_call_and_summed_in_done() -> None:
    model = FakeToolChatModel(script=[load("pdf"), say("ok")])

    events = await collect(request(skills=[skill("pdf")]), model)

    usages = of_type(events, "usage")
    assert len(usages) == 2 and all(u.prompt_tokens > 0 for u in usages)
    total = done(events).usage
    assert total.prompt_tokens == sum(u.prompt_tokens for u in usages)
    assert total.completion_tokens == sum(u.completion_tokens for u in usages)


async def test_history_reaches_the_model_as_plain_messages_before_the_new_one() -> None:
    history = [
        HistoryMessage(role="user", content="hi"),
        HistoryMessage(role="assistant", content="hello"),
    ]
    model = FakeToolChatModel(script=[say("ok")])

    events = await collect(request("again", history=history, system_prompt="Ghost."), model)

    received = model.calls[0].messages
    assert [type(m) for m in received] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert [m.text for m in received] == ["Ghost.", "hi", "hello", "again"]
    assert events[0].turn_index == 1


async def test_parallel_tool_calls_in_one_reply_all_run() -> None:
    both = AIMessage(
        content="",
        tool_calls=[
            {"name": "load_skill", "args": {"skill_name": "a"}, "id": "1"},
            {"name": "load_skill", "args": {"skill_name": "b"}, "id": "2"},
        ],
    )
    model = FakeToolChatModel(script=[both, say("ok")])

    events = await collect(request(skills=[skill("a"), skill("b")]), model)

    assert sorted(e.name for e in of_type(events, "skill_loaded")) == ["a", "b"]
    assert sorted(s.name for s in done(events).loaded_skills) == ["a", "b"]
    assert len(done(events).tool_calls) == 2


async def test_hitting_the_recursion_limit_ends_with_a_clear_error() -> None:
    def forever(messages: list[BaseMessage]) -> AIMessage:
        return load("pdf")

    model = FakeToolChatModel(script=[forever] * 50)

    events = await collect(request(skills=[skill("pdf")], recursion_limit=6), model)

    assert isinstance(events[-1], ErrorEvent) and events[-1].code == "recursion_limit"
    assert "6 agent steps" in events[-1].message
    assert of_type(events, "done") == []


async def test_a_failing_model_ends_the_turn_with_a_model_error() -> None:
    def broken(messages: list[BaseMessage]) -> AIMessage:
        raise ConnectionError("upstream down")

    events = await collect(request(), FakeToolChatModel(script=[broken]))

    assert events[-1].type == "error" and events[-1].code == "model_error"
    # The type, not the text: an upstream's words stay in the server log.
    assert events[-1].message == "the model call failed: ConnectionError"


async def test_an_invalid_request_is_an_error_event_not_an_exception() -> None:
    events = await collect(request(skills=[skill("a"), skill("a")]), FakeToolChatModel())

    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].code == "invalid_turn_request"


def tools_skill() -> Any:
    declarations = [ToolDeclaration(name=n, provider="test") for n in ToolsProvider.supported_tools]
    return skill("tools", tools=declarations)


async def test_a_raising_tool_becomes_a_tool_error_and_the_turn_goes_on() -> None:
    registry = registry_with(ToolsProvider())
    model = FakeToolChatModel(script=[load("tools"), call("explode"), say("recovered")])

    events = await collect(request(skills=[tools_skill()]), model, providers=registry)

    end = of_type(events, "tool_end")[-1]
    assert (end.name, end.error) == ("explode", True)
    assert "RuntimeError: tool blew up" in end.result
    assert end.duration_ms >= 0 and done(events).tool_calls[-1].error is True
    assert done(events).text == "recovered"


def start_blocking_turn(provider: ToolsProvider) -> tuple[list[Event], Any]:
    model = FakeToolChatModel(script=[load("tools"), call("block"), say("never")])
    stream = run_turn(
        request(skills=[tools_skill()]),
        package_source=InMemoryPackageSource(),
        frontend=InMemoryFrontendChannel(),
        model=model,
        providers=registry_with(provider),
    )
    return [], stream


async def test_cancelling_the_turn_task_yields_cancelled_and_stops_the_work() -> None:
    provider = ToolsProvider()
    events, stream = start_blocking_turn(provider)

    async def consume() -> None:
        async for event in stream:
            events.append(event)

    task = asyncio.create_task(consume())
    async with asyncio.timeout(10):
        await provider.started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert events[-1].type == "error" and events[-1].code == "cancelled"
    assert provider.cancelled.is_set()
    assert of_type(events, "done") == []
