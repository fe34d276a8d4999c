"""The shared agent graph and the LangSmith thread-hop override it installs."""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import langsmith
from langsmith._runtime_overrides import get_runtime_overrides

from chat_shell.agent.graph import _inline_unless_tracing, agent_graph

probe: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")


def test_the_graph_is_built_once_and_installs_the_override() -> None:
    assert agent_graph() is agent_graph()
    assert get_runtime_overrides().aio_to_thread is _inline_unless_tracing


def where() -> tuple[str, int]:
    return probe.get(), threading.get_ident()


async def test_without_tracing_the_bookkeeping_runs_inline_in_the_given_context() -> None:
    ctx = contextvars.copy_context()
    ctx.run(probe.set, "in ctx")

    async def default(*args: Any) -> Any:
        raise AssertionError("the thread-hopping default must not run while tracing is off")

    with langsmith.tracing_context(enabled=False):
        result = await _inline_unless_tracing(default, ctx, where)

    assert result == ("in ctx", threading.get_ident())


async def test_while_tracing_the_default_implementation_runs() -> None:
    calls: list[Any] = []

    async def default(ctx: contextvars.Context, func: Any) -> str:
        calls.append(func)
        return "default"

    with langsmith.tracing_context(enabled=True):
        result = await _inline_unless_tracing(default, contextvars.copy_context(), where)

    assert result == "default" and calls == [where]
