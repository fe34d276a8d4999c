"""The shared agent graph: built once, no thread hop per step, every tool call answered."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from chat_shell.agent._graph import agent_graph
from chat_shell.agent._steps import MALFORMED_RETRIES
from chat_shell.contracts import Event
from tests.support.fakes import FakeToolChatModel, collect, done, load, request, say, skill


class RecordingExecutor(ThreadPoolExecutor):
    """The loop's default executor, noting what is handed to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted: list[Any] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted.append(fn)
        return super().submit(fn, *args, **kwargs)


def test_the_graph_is_built_once_with_a_model_and_a_tools_node() -> None:
    graph = agent_graph()

    assert agent_graph() is graph
    assert {"model", "tools"} <= set(graph.get_graph().nodes)


def test_a_turn_that_calls_a_tool_hands_no_step_to_a_thread() -> None:
    # create_agent ran each middleware hook's LangSmith bookkeeping in a worker thread, twice
    # per hook, tracing on or off: the largest cost of a fast turn.
    executor = RecordingExecutor()
    model = FakeToolChatModel(script=[load("pdf"), say("done")])

    async def turn() -> tuple[list[Event], int]:
        events = await collect(request(skills=[skill("pdf")]), model)
        during = len(executor.submitted)
        await asyncio.to_thread(len, "")  # the recorder sees what reaches the default executor
        assert len(executor.submitted) == during + 1
        return events, during

    def on_own_loop() -> tuple[list[Event], int]:
        # A loop of its own: the tests' loop is shared, and its default executor with it.
        loop = asyncio.new_event_loop()
        loop.set_default_executor(executor)
        try:
            return loop.run_until_complete(turn())
        finally:
            loop.close()

    with ThreadPoolExecutor(max_workers=1) as thread:
        events, handed_to_threads = thread.submit(on_own_loop).result()

    assert done(events).text == "done" and len(model.calls) == 2
    assert [e.type for e in events].count("tool_end") == 1
    assert handed_to_threads == 0


def malformed(call_id: str, text: str = "") -> AIMessage:
    """A reply whose only tool call has arguments that are not JSON."""
    reply = AIMessage(content=text)
    broken = {"name": "load_skill", "args": "skill_name=pdf", "id": call_id, "error": "not JSON"}
    reply.invalid_tool_calls = [{**broken, "type": "invalid_tool_call"}]  # type: ignore[list-item]
    return reply


async def test_a_malformed_tool_call_is_answered_before_the_next_model_call() -> None:
    reply = load("pdf")
    reply.invalid_tool_calls = malformed("bad-1").invalid_tool_calls
    model = FakeToolChatModel(script=[reply, say("ok")])

    events = await collect(request(skills=[skill("pdf")]), model)

    assert done(events).text == "ok"
    answers = [m for m in model.calls[1].messages if isinstance(m, ToolMessage)]
    by_call = {m.tool_call_id: m for m in answers}
    assert set(by_call) == {reply.tool_calls[0]["id"], "bad-1"}
    assert by_call["bad-1"].status == "error" and "malformed" in by_call["bad-1"].text
    assert by_call[reply.tool_calls[0]["id"]].status == "success"
    # Each call is answered once, right after the reply that made it.
    made = [i for i, m in enumerate(model.calls[1].messages) if isinstance(m, AIMessage)]
    assert all(isinstance(m, ToolMessage) for m in model.calls[1].messages[made[-1] + 1 :])


async def test_a_reply_of_malformed_calls_only_gets_their_errors_and_another_call() -> None:
    model = FakeToolChatModel(script=[malformed("bad-1"), load("pdf"), say("ok")])

    events = await collect(request(skills=[skill("pdf")]), model)

    assert done(events).text == "ok" and len(model.calls) == 3
    retry = model.calls[1].messages
    (answer,) = [m for m in retry if isinstance(m, ToolMessage)]
    assert answer.tool_call_id == "bad-1" and answer.status == "error"
    made = retry.index(answer) - 1  # right after the reply that made the call
    assert isinstance(retry[made], AIMessage) and retry[made].invalid_tool_calls
    assert [e.type for e in events].count("skill_loaded") == 1  # the repaired call ran


async def test_a_model_that_keeps_sending_malformed_calls_is_called_a_bounded_number_of_times() -> (
    None
):
    script = [malformed(f"bad-{i}", text=f"try {i}") for i in range(MALFORMED_RETRIES + 3)]
    model = FakeToolChatModel(script=script)

    events = await collect(request(skills=[skill("pdf")]), model)

    assert len(model.calls) == 1 + MALFORMED_RETRIES
    assert done(events).text == f"try {MALFORMED_RETRIES}"  # the last reply is the answer
    # Each retry saw the errors of every malformed call before it.
    last = model.calls[-1].messages
    errors = [m.tool_call_id for m in last if isinstance(m, ToolMessage)]
    assert errors == [f"bad-{i}" for i in range(MALFORMED_RETRIES)]
