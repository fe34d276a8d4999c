"""The agent graph, compiled once per process and shared by all turns.

Compiling costs about as much as a whole fast turn, and nothing in the graph is turn-specific:
model, prompt and tools come from the `TurnContext` passed as runtime context (see middleware).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from langchain.agents import create_agent
from langgraph.graph.state import CompiledStateGraph

from chat_shell.agent.middleware import TurnMiddleware
from chat_shell.agent.session import TurnContext
from chat_shell.offline import OfflineChatModel


@cache
def agent_graph() -> CompiledStateGraph[Any, TurnContext, Any, Any]:
    # The model given here is never called: the middleware swaps in the turn's model.
    return create_agent(
        OfflineChatModel(),
        tools=[],
        middleware=[TurnMiddleware()],
        context_schema=TurnContext,
        name="skillhive",
    )
