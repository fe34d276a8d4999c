"""A skill's `allowed-tools` at runtime: its tools outside the allowlist are never offered."""

from __future__ import annotations

from chat_shell.contracts import ToolDeclaration
from tests.support.agent import ToolsProvider, fixture_server, mcp_skill, registry_with, tool_texts
from tests.support.fakes import FakeToolChatModel, call, collect, load, request, say, skill


async def test_a_skills_mcp_tools_outside_its_allowlist_are_not_offered_nor_callable() -> None:
    fx = mcp_skill("fx", fixture_server()).model_copy(
        update={"allowed_tools": ["echo", "fx-server/pid"]}
    )
    model = FakeToolChatModel(script=[load("fx"), call("get_env", name="HOME"), say("ok")])

    await collect(request(skills=[fx]), model)

    offered = set(model.calls[1].tool_names)
    assert {"echo", "pid"} <= offered
    assert not {"get_env", "hang", "crash", "get_header"} & offered
    assert "not available" in tool_texts(model)[-1]


async def test_without_an_allowlist_every_tool_of_the_skill_is_offered() -> None:
    model = FakeToolChatModel(script=[load("fx"), say("ok")])

    await collect(request(skills=[mcp_skill("fx", fixture_server())]), model)

    assert {"echo", "pid", "get_env", "hang"} <= set(model.calls[1].tool_names)


async def test_a_skills_provider_tools_follow_its_allowlist_too() -> None:
    declarations = [ToolDeclaration(name=n, provider="test") for n in ToolsProvider.supported_tools]
    allowed = ToolsProvider.supported_tools[0]
    tools = skill("tools", tools=declarations, public=True, allowed_tools=[allowed])
    model = FakeToolChatModel(script=[load("tools"), say("ok")])

    await collect(request(skills=[tools]), model, providers=registry_with(ToolsProvider()))

    offered = set(model.calls[1].tool_names)
    assert allowed in offered
    assert not (set(ToolsProvider.supported_tools) - {allowed}) & offered
