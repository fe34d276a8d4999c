"""The agent graph, compiled once per process and shared by all turns.

Compiling costs about as much as a whole fast turn, and nothing in the graph is turn-specific:
model, prompt and tools come from the `TurnSession` passed as runtime context (_steps.py).

The loop is LangGraph's own: a model node, and LangGraph's `ToolNode` whose `awrap_tool_call`
hands each call the turn's tool. It is not `langchain.agents.create_agent` with a middleware:
that wraps every middleware hook in a LangSmith span whose setup and teardown each run in a
worker thread, tracing on or off, and those thread hops were the largest cost of a fast turn
(about a third of it). Tracing still sees the graph, its nodes, model calls and tools.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode

from chat_shell.agent._session import TurnContext
from chat_shell.agent._steps import (
    AGENT_NAME,
    MODEL,
    TOOLS,
    TurnState,
    call_model,
    wrap_tool_call,
)
from chat_shell.tools.builtin.load_skill import LOAD_SKILL
from chat_shell.tools.builtin.search_skills import SEARCH_SKILLS


@cache
def agent_graph() -> CompiledStateGraph[TurnState, TurnContext, Any, Any]:
    graph = StateGraph(TurnState, context_schema=TurnContext)
    graph.add_node(MODEL, call_model, destinations=(TOOLS, MODEL, END))
    # load_skill and search_skills are registered so LangGraph analyses them once, not per call;
    # every other tool is the turn's, handed to the call by `wrap_tool_call`.
    graph.add_node(TOOLS, ToolNode([LOAD_SKILL, SEARCH_SKILLS], awrap_tool_call=wrap_tool_call))
    graph.add_edge(START, MODEL)
    graph.add_edge(TOOLS, MODEL)
    return graph.compile(name=AGENT_NAME)
