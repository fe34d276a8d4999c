"""The agent graph, compiled once per process and shared by all turns.

Compiling costs about as much as a whole fast turn, and nothing in the graph is turn-specific:
model, prompt and tools come from the `TurnSession` passed as runtime context (see middleware).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from functools import cache
from typing import Any

import langsmith
from langchain.agents import create_agent
from langgraph.graph.state import CompiledStateGraph
from langsmith.utils import tracing_is_enabled

from chat_shell.agent._middleware import TurnMiddleware
from chat_shell.agent._session import TurnContext
from chat_shell.offline import OfflineChatModel
from chat_shell.tools.builtin.load_skill import LOAD_SKILL
from chat_shell.tools.builtin.search_skills import SEARCH_SKILLS


@cache
def agent_graph() -> CompiledStateGraph[Any, TurnContext, Any, Any]:
    # The model given here is never called: the middleware swaps in the turn's model and tools.
    # load_skill and search_skills are registered so LangGraph analyses them once, not per call.
    return create_agent(
        OfflineChatModel(),
        tools=[LOAD_SKILL, SEARCH_SKILLS],
        middleware=[TurnMiddleware()],
        context_schema=TurnContext,
        name="skillhive",
    )


async def _inline_unless_tracing(
    default: Callable[..., Any],
    ctx: contextvars.Context,
    func: Callable[..., Any],
    /,
    *args: Any,
    **kwargs: Any,
) -> Any:
    if tracing_is_enabled():
        return await default(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def inline_tracing_hooks() -> None:
    """Opt-in, process-wide: run LangSmith's per-hook bookkeeping inline while tracing is off.

    LangChain wraps every middleware hook in a LangSmith span whose setup and teardown run in a
    worker thread, so they never block the loop when a trace is being sent. With tracing off
    they are a few microseconds of in-memory work, but the two thread hops per hook were the
    largest cost of a fast turn. This sets LangSmith's public runtime override, which replaces
    any other, so only the host decides (`SKILLHIVE_INLINE_TRACING_HOOKS`); the override keeps
    the default whenever tracing is on.
    """
    langsmith.set_runtime_overrides(aio_to_thread=_inline_unless_tracing)
