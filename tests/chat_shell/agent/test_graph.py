"""The shared agent graph, and the LangSmith thread-hop override a host may opt into."""

from __future__ import annotations

import contextvars
import threading
from typing import Any
from unittest import mock

import langsmith

from chat_shell import inline_tracing_hooks
from chat_shell.agent._graph import _inline_unless_tracing, agent_graph

probe: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")


def test_the_graph_is_built_once_and_installs_nothing_process_wide() -> None:
    agent_graph.cache_clear()
    with mock.patch.object(langsmith, "set_runtime_overrides") as override:
        assert agent_graph() is agent_graph()
    override.assert_not_called()


def test_the_override_is_installed_only_when_the_host_asks() -> None:
    with mock.patch.object(langsmith, "set_runtime_overrides") as override:
        inline_tracing_hooks()
    override.assert_called_once_with(aio_to_thread=_inline_unless_tracing)


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
