"""Agent-runner helpers: a tool provider whose tools fail or block, and MCP skills on the
fixture server, for the chat_shell agent tests."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from chat_shell.contracts import SkillSpec
from chat_shell.skills import ProviderContext, ProviderRegistry, SkillToolProvider
from chat_shell.tools.mcp import McpServerConfig, parse_mcp_server
from tests.support.fakes import FakeToolChatModel, skill
from tests.support.mcp_servers import FIXTURE_SERVER


class ToolsProvider(SkillToolProvider):
    """Test tools: one that fails, one that blocks until cancelled."""

    provider_name = "test"
    supported_tools = ("explode", "block")

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    def create_tool(
        self, tool_name: str, context: ProviderContext, config: Mapping[str, Any]
    ) -> BaseTool:
        async def explode() -> str:
            raise RuntimeError("tool blew up")

        async def block() -> str:
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            return "unreachable"

        function = explode if tool_name == "explode" else block
        return StructuredTool.from_function(coroutine=function, name=tool_name, description=".")


def registry_with(provider: ToolsProvider) -> ProviderRegistry:
    registry = ProviderRegistry()
    registry.register(provider)
    return registry


def fixture_server(*, trusted: bool = True) -> McpServerConfig:
    command = {"command": sys.executable, "args": [str(FIXTURE_SERVER), "stdio"]}
    return parse_mcp_server(command, trusted=trusted)


def mcp_skill(name: str, config: McpServerConfig, *, public: bool = True) -> SkillSpec:
    return skill(name, public=public, mcp_servers={f"{name}-server": config})


def tool_texts(model: FakeToolChatModel) -> list[str]:
    return [m.text for m in model.calls[-1].messages if isinstance(m, ToolMessage)]
