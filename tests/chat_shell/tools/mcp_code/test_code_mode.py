"""Code mode through whole turns: a scripted model writes code that calls real MCP servers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from chat_shell.agent import run_turn
from chat_shell.contracts import Event, McpCallEvent, TurnRequest
from chat_shell.offline import ScriptedChatModel
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from chat_shell.sandbox import BubblewrapSandbox
from chat_shell.skills.registry import ProviderRegistry
from chat_shell.tools.mcp import McpServerConfig
from chat_shell.tools.sandbox import SandboxAccess
from tests.support.fakes import LOOPBACK, call, done, of_type, request, say

# The first run installs the servers inside fixture setup, which pytest-timeout counts.
pytestmark = pytest.mark.timeout(600)

CODE_TOOLS = {"list_mcp_servers", "search_mcp_tools", "execute_code"}


async def turn(
    turn_request: TurnRequest, model: ScriptedChatModel, access: SandboxAccess | None
) -> list[Event]:
    return [
        event
        async for event in run_turn(
            turn_request,
            package_source=InMemoryPackageSource(),
            frontend=InMemoryFrontendChannel(),
            model=model,
            providers=ProviderRegistry(),
            sandbox=access,
        )
    ]


def results(model: ScriptedChatModel) -> dict[str, ToolMessage]:
    """The tool messages the model saw last, by tool name (the last of each name)."""
    return {m.name or "": m for m in model.calls[-1].messages if isinstance(m, ToolMessage)}


def executed(model: ScriptedChatModel) -> dict[str, Any]:
    message = results(model)["execute_code"]
    assert message.status != "error", message.text
    found: dict[str, Any] = json.loads(message.text)
    return found


def code_request(servers: dict[str, McpServerConfig], **fields: Any) -> TurnRequest:
    return request(
        "what time is it?", mcp_servers=servers, mcp_tool_mode="code", egress=LOOPBACK, **fields
    )


TIME_CODE = """\
from mcp_tools import get_current_time, convert_time
now = get_current_time(timezone="UTC")
moved = convert_time(source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo")
print(now["timezone"], moved["target"]["timezone"])
"""


async def test_code_mode_offers_three_tools_and_runs_code_against_the_time_server(
    sandbox: BubblewrapSandbox, time_server: McpServerConfig
) -> None:
    model = ScriptedChatModel(
        script=[
            call("list_mcp_servers"),
            call("search_mcp_tools", query="current time timezone"),
            call("execute_code", code=TIME_CODE),
            say("It is noon somewhere."),
        ]
    )
    events = await turn(code_request({"clock": time_server}), model, SandboxAccess(sandbox))

    assert done(events).text == "It is noon somewhere."
    first = model.calls[0]
    assert set(first.tool_names) == CODE_TOOLS  # no MCP schema in the prompt
    seen = results(model)
    servers = json.loads(seen["list_mcp_servers"].text)["servers"]
    assert servers == [{"name": "clock", "tools": 2}]
    found = json.loads(seen["search_mcp_tools"].text)["functions"]
    assert found[0]["function"] == "get_current_time" and "input_schema" not in found[0]
    ran = executed(model)
    assert ran["exit_code"] == 0, ran["stderr"]
    assert ran["stdout"].split() == ["UTC", "Asia/Tokyo"]
    assert ran["mcp_calls"] == [
        {"tool": "get_current_time", "ok": True},
        {"tool": "convert_time", "ok": True},
    ]
    audit = [e for e in events if isinstance(e, McpCallEvent)]
    assert [(e.tool, e.server, e.ok) for e in audit] == [
        ("get_current_time", "clock", True),
        ("convert_time", "clock", True),
    ]
    assert json.loads(audit[0].arguments) == {"timezone": "UTC"}


EVERYTHING_CODE = """\
from mcp_tools import echo, get_sum, get_current_time
total = get_sum(a=2, b=40)
print(echo(message=f"sum is {total}"))
print(get_current_time(timezone="Europe/Paris")["timezone"])
"""


async def test_code_mode_calls_tools_of_two_servers_with_an_exact_name_schema(
    sandbox: BubblewrapSandbox, time_server: McpServerConfig, everything_http: McpServerConfig
) -> None:
    model = ScriptedChatModel(
        script=[
            call("search_mcp_tools", query="get_sum"),
            call("execute_code", code=EVERYTHING_CODE),
            say("done"),
        ]
    )
    servers = {"clock": time_server, "everything": everything_http}
    events = await turn(code_request(servers), model, SandboxAccess(sandbox))

    done(events)
    found = json.loads(results(model)["search_mcp_tools"].text)["functions"]
    assert found[0]["function"] == "get_sum" and found[0]["tool"] == "get-sum"
    assert set(found[0]["input_schema"]["properties"]) == {"a", "b"}
    assert all("input_schema" not in f for f in found[1:])
    ran = executed(model)
    assert ran["exit_code"] == 0, ran["stderr"]
    lines = ran["stdout"].splitlines()
    assert lines[0] == "Echo: sum is The sum of 2 and 40 is 42." and lines[1] == "Europe/Paris"
    audit = [(e.tool, e.server, e.ok) for e in of_type(events, "mcp_call")]
    assert audit == [
        ("get-sum", "everything", True),
        ("echo", "everything", True),
        ("get_current_time", "clock", True),
    ]


async def test_a_failing_tool_raises_in_the_code_and_is_audited_as_an_error(
    sandbox: BubblewrapSandbox, time_server: McpServerConfig
) -> None:
    code = """\
from mcp_tools import get_current_time, McpToolError
try:
    get_current_time(timezone="Not/AZone")
except McpToolError as exc:
    print("failed:", exc.code)
"""
    model = ScriptedChatModel(script=[call("execute_code", code=code), say("ok")])
    events = await turn(code_request({"clock": time_server}), model, SandboxAccess(sandbox))

    ran = executed(model)
    assert ran["stdout"].strip() == "failed: mcp_tool_failed"
    (audit,) = of_type(events, "mcp_call")
    assert (audit.tool, audit.ok, audit.code) == ("get_current_time", False, "mcp_tool_failed")


async def test_without_a_sandbox_code_mode_falls_back_to_direct_tools_with_a_notice(
    time_server: McpServerConfig,
) -> None:
    model = ScriptedChatModel(script=[say("fine")])
    events = await turn(code_request({"clock": time_server}), model, None)

    notice = next(e for e in events if e.type == "mcp_error")
    assert notice.code == "mcp_code_unavailable"
    assert {"get_current_time", "convert_time"} <= set(model.calls[0].tool_names)
    assert not CODE_TOOLS & set(model.calls[0].tool_names)


async def test_direct_mode_stays_the_default(
    sandbox: BubblewrapSandbox, time_server: McpServerConfig
) -> None:
    model = ScriptedChatModel(script=[say("fine")])
    turn_request = request(mcp_servers={"clock": time_server})
    await turn(turn_request, model, SandboxAccess(sandbox))

    assert turn_request.mcp_tool_mode == "direct"
    assert {"get_current_time", "convert_time"} <= set(model.calls[0].tool_names)
    assert not CODE_TOOLS & set(model.calls[0].tool_names)


HOSTILE_CODE = """\
import socket, struct
from mcp_tools import McpToolError, call_tool, get_current_time

for name in ("load_skill", "execute_code", "nope"):
    try:
        call_tool(name, {})
    except McpToolError as exc:
        print(name, exc.code)
with socket.socket(socket.AF_UNIX) as raw:
    raw.connect("/mcp/bridge.sock")
    raw.sendall(struct.pack(">I", 1 << 30))
    size = struct.unpack(">I", raw.recv(4))[0]
    print("huge", raw.recv(size).decode().count("mcp_bridge_bad_frame"))
for _ in range(3):
    try:
        get_current_time(timezone="UTC")
        print("call ok")
    except McpToolError as exc:
        print("call", exc.code)
"""


async def test_sandboxed_code_reaches_only_the_turns_mcp_tools_within_the_budget(
    sandbox: BubblewrapSandbox, time_server: McpServerConfig
) -> None:
    model = ScriptedChatModel(script=[call("execute_code", code=HOSTILE_CODE), say("ok")])
    access = SandboxAccess(sandbox, mcp_call_budget=2)
    events = await turn(code_request({"clock": time_server}), model, access)

    ran = executed(model)
    assert ran["stdout"].splitlines() == [
        "load_skill mcp_unknown_tool",
        "execute_code mcp_unknown_tool",
        "nope mcp_unknown_tool",
        "huge 1",
        "call ok",
        "call ok",
        "call mcp_call_budget_exceeded",
    ], ran["stderr"]
    audit = [(e.tool, e.ok, e.code) for e in of_type(events, "mcp_call")]
    assert audit == [
        ("get_current_time", True, None),
        ("get_current_time", True, None),
        ("get_current_time", False, "mcp_call_budget_exceeded"),
    ]
