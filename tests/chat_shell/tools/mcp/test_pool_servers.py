"""The session pool against real servers: stdio, streamable HTTP and SSE, reuse, naming."""

from __future__ import annotations

import asyncio
import json

import pytest

from chat_shell.tools.mcp import McpServerConfig, parse_mcp_server
from tests.support.mcp_pool import by_name, call, call_ok, loopback_pool
from tests.support.mcp_servers import child_processes

# The first run installs the servers inside fixture setup, which pytest-timeout counts.
pytestmark = pytest.mark.timeout(600)

CONTEXT = {"user": {"id": 7, "name": "ann"}, "conversation": {"id": "c-9"}, "secrets": {"K": "s3"}}


async def test_time_server_over_stdio_lists_tools_and_answers(time_server: McpServerConfig) -> None:
    async with loopback_pool() as pool:
        tools, failures = await pool.connect({"time": time_server}, CONTEXT)
        assert failures == []
        assert {"get_current_time", "convert_time"} <= set(by_name(tools))
        text = await call_ok(by_name(tools)["get_current_time"], timezone="Europe/Paris")
        assert json.loads(text)["timezone"] == "Europe/Paris"


async def test_one_stdio_session_serves_every_call_of_the_turn(
    time_server: McpServerConfig,
) -> None:
    marker = str(time_server.command)
    async with loopback_pool() as pool:
        tools, _ = await pool.connect({"time": time_server}, CONTEXT)
        started = child_processes(marker)
        assert len(started) == 1
        tool = by_name(tools)["get_current_time"]
        answers = await asyncio.gather(*(call_ok(tool, timezone="UTC") for _ in range(3)))
        answers.append(
            await call_ok(
                by_name(tools)["convert_time"],
                source_timezone="UTC",
                time="12:00",
                target_timezone="Asia/Tokyo",
            )
        )
        assert all(answers)
        assert child_processes(marker) == started  # the same process, no new one per call
        again, _ = await pool.connect({"time": time_server}, CONTEXT)  # already connected
        assert [t.name for t in again] == [t.name for t in tools]
        assert child_processes(marker) == started
        assert pool.sessions_opened == 1
    assert child_processes(marker) == []  # closed with the pool


async def test_the_fixture_server_answers_every_call_from_one_process(
    fixture_stdio: McpServerConfig,
) -> None:
    async with loopback_pool() as pool:
        tools, _ = await pool.connect({"fx": fixture_stdio}, CONTEXT)
        pids = {await call_ok(by_name(tools)["pid"]) for _ in range(3)}
        assert [int(p) for p in pids] == child_processes(" ".join(fixture_stdio.args))


async def test_everything_server_over_streamable_http_and_sse(
    everything_http: McpServerConfig, everything_sse: McpServerConfig
) -> None:
    for transport, config in (("http", everything_http), ("sse", everything_sse)):
        async with loopback_pool() as pool:
            tools, failures = await pool.connect({"everything": config}, CONTEXT)
            assert failures == [], transport
            text = await call_ok(by_name(tools)["echo"], message=f"hi over {transport}")
            assert f"hi over {transport}" in text
            text = await call_ok(by_name(tools)["get-sum"], a=2, b=3)
            assert "5" in text


async def test_clashing_names_in_one_batch_get_the_server_prefix(
    everything_http: McpServerConfig, everything_sse: McpServerConfig
) -> None:
    async with loopback_pool() as pool:
        tools, _ = await pool.connect({"web": everything_http, "stream": everything_sse}, CONTEXT)
        names = by_name(tools)
        assert "echo" not in names
        assert "via web" in await call_ok(names["web_echo"], message="via web")
        assert "via sse" in await call_ok(names["stream_echo"], message="via sse")


async def test_a_later_server_never_renames_tools_already_handed_out(
    everything_http: McpServerConfig, fixture_stdio: McpServerConfig
) -> None:
    async with loopback_pool() as pool:
        first, _ = await pool.connect({"everything": everything_http}, CONTEXT)
        later, _ = await pool.connect({"fx": fixture_stdio}, CONTEXT, reserved_names={"pid"})
        assert "echo" in by_name(first)
        names = by_name(later)
        assert {"fx_echo", "fx_pid", "get_env"} <= set(names)
        assert await call_ok(names["fx_echo"], message="m") == "fixture: m"
        assert "from everything" in await call_ok(by_name(first)["echo"], message="from everything")
        assert len(pool.tools) == len(first) + len(later)


async def test_parallel_connects_of_one_server_share_its_session(
    fixture_stdio: McpServerConfig,
) -> None:
    async with loopback_pool() as pool:
        results = await asyncio.gather(
            *(pool.connect({"fx": fixture_stdio}, CONTEXT) for _ in range(3))
        )
        assert [sorted(t.name for t in tools) for tools, _ in results] == [
            sorted(t.name for t in results[0][0])
        ] * 3
        assert "echo" in by_name(results[0][0])
        assert len(child_processes(" ".join(fixture_stdio.args))) == 1
        assert pool.sessions_opened == 1


async def test_headers_and_env_reach_the_server_substituted(
    fixture_http: McpServerConfig, fixture_stdio: McpServerConfig
) -> None:
    remote = fixture_http.model_copy(
        update={"headers": {"Authorization": "Bearer ${{secrets.K}}", "X-User": "${{user.id}}"}}
    )
    local = parse_mcp_server(
        {**fixture_stdio.model_dump(), "env": {"CONV": "${{conversation.id}}"}}, trusted=True
    )
    async with loopback_pool() as pool:
        tools, failures = await pool.connect({"remote": remote, "local": local}, CONTEXT)
        assert failures == []
        names = by_name(tools)
        assert await call_ok(names["remote_get_header"], name="authorization") == "Bearer s3"
        assert await call_ok(names["remote_get_header"], name="x-user") == "7"
        assert await call_ok(names["local_get_env"], name="CONV") == "c-9"


def with_env(config: McpServerConfig, **env: str) -> McpServerConfig:
    return config.model_copy(update={"env": env})


async def test_a_skill_scope_connects_its_own_server_of_a_ghost_servers_name(
    fixture_stdio: McpServerConfig,
) -> None:
    async with loopback_pool() as pool:
        ghost, _ = await pool.connect({"fx": with_env(fixture_stdio, WHO="ghost")}, CONTEXT)
        skill, failures = await pool.connect(
            {"fx": with_env(fixture_stdio, WHO="skill")}, CONTEXT, scope="s"
        )
        assert failures == [] and pool.sessions_opened == 2
        assert sorted(by_name(skill)) == sorted(by_name(ghost))  # it takes over the names
        assert await call_ok(by_name(ghost)["get_env"], name="WHO") == "ghost"
        assert await call_ok(by_name(skill)["get_env"], name="WHO") == "skill"
        assert pool.shadowed(["fx", "other"]) == ghost


async def test_a_skill_scope_never_takes_names_reserved_or_held_by_another_skill(
    fixture_stdio: McpServerConfig,
) -> None:
    async with loopback_pool() as pool:
        await pool.connect({"fx": fixture_stdio}, CONTEXT)
        first, _ = await pool.connect({"fx": fixture_stdio}, CONTEXT, scope="a")
        second, _ = await pool.connect(
            {"fx": with_env(fixture_stdio, X="1")}, CONTEXT, scope="b", reserved_names={"pid"}
        )
        assert {"echo", "pid"} <= set(by_name(first))
        assert {"fx_echo", "fx_pid"} <= set(by_name(second))
        assert len({t.name for t in pool.tools}) == len(pool.tools) - len(first)


async def test_a_tool_error_from_the_server_is_an_error_tool_message(
    time_server: McpServerConfig,
) -> None:
    async with loopback_pool() as pool:
        tools, _ = await pool.connect({"time": time_server}, CONTEXT)
        message = await call(by_name(tools)["get_current_time"], timezone="Not/AZone")
        assert message.status == "error"
        assert "Not/AZone" in message.text
