"""MCP tools in turns, against a real MCP server (the MCP tests' fixture server over stdio)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from chat_shell.agent import run_turn
from chat_shell.contracts import Event
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from chat_shell.tools.mcp import McpServerConfig, parse_mcp_server
from tests.support.agent import fixture_server, mcp_skill, tool_texts
from tests.support.cluster import free_port
from tests.support.fakes import (
    LOOPBACK,
    FakeToolChatModel,
    call,
    collect,
    done,
    load,
    of_type,
    request,
    say,
    skill,
)
from tests.support.mcp_servers import FIXTURE_SERVER


def canary_server(canary: Path) -> McpServerConfig:
    """A stdio 'server' whose only effect is to prove that it was started."""
    script = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('started')"
    return parse_mcp_server(
        {"command": sys.executable, "args": ["-c", script, str(canary)]}, trusted=True
    )


async def test_the_ghosts_mcp_tools_are_visible_from_the_first_call() -> None:
    model = FakeToolChatModel(script=[call("echo", message="hi"), say("ok")])

    events = await collect(request(mcp_servers={"fx": fixture_server()}), model)

    assert {"echo", "pid", "hang"} <= set(model.calls[0].tool_names)
    assert tool_texts(model) == ["fixture: hi"]
    assert of_type(events, "mcp_error") == [] and done(events).text == "ok"


async def test_a_skills_mcp_servers_connect_only_when_it_is_loaded(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    skills = [mcp_skill("fx", fixture_server()), mcp_skill("idle", canary_server(canary))]
    model = FakeToolChatModel(script=[load("fx"), call("echo", message="yo"), say("ok")])

    events = await collect(request(skills=skills), model)

    assert model.calls[0].tool_names == ["load_skill"]
    assert "echo" in model.calls[1].tool_names
    assert tool_texts(model)[-1] == "fixture: yo"
    assert not canary.exists() and of_type(events, "mcp_error") == []


async def test_a_non_public_skill_may_not_start_stdio_servers(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    private = mcp_skill("mine", canary_server(canary), public=False)  # the payload says trusted
    model = FakeToolChatModel(script=[load("mine"), say("ok")])

    events = await collect(request(skills=[private]), model)

    (error,) = of_type(events, "mcp_error")
    assert (error.server, error.code) == ("mine-server", "mcp_stdio_forbidden")
    assert not canary.exists() and done(events).text == "ok"


async def test_a_dead_server_is_reported_and_the_others_keep_working() -> None:
    dead = parse_mcp_server(
        {"type": "http", "url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 10},
        trusted=False,
    )
    model = FakeToolChatModel(script=[call("echo", message="still here"), say("ok")])

    turn = request(mcp_servers={"dead": dead, "fx": fixture_server()}, egress=LOOPBACK)
    events = await collect(turn, model)

    (error,) = of_type(events, "mcp_error")
    assert error.server == "dead" and error.code.startswith("mcp_connect")
    assert tool_texts(model) == ["fixture: still here"]


def process_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_cancelling_a_turn_closes_its_mcp_sessions() -> None:
    model = FakeToolChatModel(script=[call("pid"), call("hang"), say("never")])
    events: list[Event] = []
    hanging = asyncio.Event()

    async def consume() -> None:
        async for event in run_turn(
            request(mcp_servers={"fx": fixture_server()}),
            package_source=InMemoryPackageSource(),
            frontend=InMemoryFrontendChannel(),
            model=model,
        ):
            events.append(event)
            if event.type == "tool_start" and event.name == "hang":
                hanging.set()

    task = asyncio.create_task(consume())
    async with asyncio.timeout(30):
        await hanging.wait()
    pid = int(of_type(events, "tool_end")[0].result)
    assert process_alive(pid)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert events[-1].type == "error" and events[-1].code == "cancelled"
    assert not process_alive(pid)


async def test_a_caller_that_stops_listening_closes_the_mcp_sessions() -> None:
    model = FakeToolChatModel(script=[call("pid"), say("never streamed")])
    stream = run_turn(
        request(mcp_servers={"fx": fixture_server()}),
        package_source=InMemoryPackageSource(),
        frontend=InMemoryFrontendChannel(),
        model=model,
    )

    async with asyncio.timeout(30):
        async for event in stream:
            if event.type == "tool_end":
                pid = int(event.result)
                assert process_alive(pid)
                break
        await stream.aclose()

    assert not process_alive(pid)


def fixture_with_env(**env: str) -> McpServerConfig:
    command = {"command": sys.executable, "args": [str(FIXTURE_SERVER), "stdio"], "env": env}
    return parse_mcp_server(command, trusted=True)


async def test_a_skills_own_server_serves_its_tools_over_the_ghosts_server_of_that_name() -> None:
    ghost = {"fx": fixture_with_env(WHO="ghost")}
    own = skill("own", public=True, mcp_servers={"fx": fixture_with_env(WHO="skill")})
    script = [call("get_env", name="WHO"), load("own"), call("get_env", name="WHO"), say("ok")]
    model = FakeToolChatModel(script=script)

    events = await collect(request(skills=[own], mcp_servers=ghost), model)

    assert tool_texts(model) == ["ghost", tool_texts(model)[1], "skill"]
    first, _, after = (c.tool_names for c in model.calls[:3])
    assert sorted(after) == sorted(first)  # the same names, now served by the skill's server
    assert of_type(events, "mcp_error") == [] and done(events).text == "ok"


async def test_the_ghosts_server_is_replaced_even_when_the_skills_server_fails() -> None:
    dead = parse_mcp_server(
        {"type": "http", "url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 10},
        trusted=True,
    )
    own = skill("own", public=True, mcp_servers={"fx": dead})
    script = [load("own"), call("get_env", name="WHO"), say("ok")]
    model = FakeToolChatModel(script=script)

    events = await collect(
        request(skills=[own], mcp_servers={"fx": fixture_with_env(WHO="ghost")}), model
    )

    assert "get_env" in model.calls[0].tool_names
    assert model.calls[1].tool_names == ["load_skill"]
    assert "not available" in tool_texts(model)[-1]
    (error,) = of_type(events, "mcp_error")
    assert error.server == "fx" and error.code.startswith("mcp_connect")
