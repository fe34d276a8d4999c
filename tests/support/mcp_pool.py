"""Helpers for calling the LangChain tools the pool returns, as the agent's tool node does."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from chat_shell.tools.mcp import McpFailure, McpSessionPool
from tests.support.fakes import LOOPBACK


def loopback_pool(**options: Any) -> McpSessionPool:
    """A session pool whose egress policy allows the test servers on 127.0.0.1."""
    return McpSessionPool(egress=LOOPBACK, **options)


def by_name(tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in tools}


async def call(tool: BaseTool, **args: Any) -> ToolMessage:
    """Invoke the tool with a tool call (like the agent does) and return its ToolMessage."""
    result = await tool.ainvoke(
        {"type": "tool_call", "id": "call-1", "name": tool.name, "args": args}
    )
    assert isinstance(result, ToolMessage)
    return result


async def call_ok(tool: BaseTool, **args: Any) -> str:
    message = await call(tool, **args)
    assert message.status == "success", message.text
    return message.text


def codes(failures: list[McpFailure]) -> dict[str, str]:
    return {f.server: f.code for f in failures}
