"""What goes wrong with MCP servers is reported, never fatal to the turn; nothing leaks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from chat_shell.tools.mcp import McpError, McpServerConfig, parse_mcp_server
from tests.support.cluster import free_port
from tests.support.mcp_pool import by_name, call, call_ok, codes, loopback_pool
from tests.support.mcp_servers import child_processes

# The first run installs the servers inside fixture setup, which pytest-timeout counts.
pytestmark = pytest.mark.timeout(600)

CONTEXT = {"user": {"id": 7}, "secrets": {"TOKEN": "hunter2-very-secret"}}


def remote(url: str) -> McpServerConfig:
    return parse_mcp_server({"type": "http", "url": url}, trusted=False)


def marker(config: McpServerConfig) -> str:
    return " ".join([str(config.command), *config.args])


async def wait_for(condition: Callable[[], bool], timeout_s: float = 30) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110 - process state has no event to wait on
            await asyncio.sleep(0.02)


@pytest.fixture
async def silent_port() -> AsyncIterator[int]:
    """A TCP port that accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_dead_servers_are_reported_and_the_others_work(time_server: McpServerConfig) -> None:
    servers = {
        "refused": remote(f"http://127.0.0.1:{free_port()}/mcp"),
        "refused_sse": parse_mcp_server(
            {"type": "sse", "url": f"http://127.0.0.1:{free_port()}/sse"}, trusted=False
        ),
        "bad_command": parse_mcp_server({"command": "/nonexistent/mcp-server"}, trusted=True),
        "time": time_server,
    }
    async with loopback_pool() as pool:
        tools, failures = await pool.connect(servers, CONTEXT)
        assert codes(failures) == {
            "refused": "mcp_connect_failed",
            "refused_sse": "mcp_connect_failed",
            "bad_command": "mcp_connect_failed",
        }
        assert "/nonexistent/mcp-server" in {f.server: f.message for f in failures}["bad_command"]
        assert await call_ok(by_name(tools)["get_current_time"], timezone="UTC")
        assert pool.failures == failures
        again, more = await pool.connect(servers, CONTEXT)  # failed servers are not retried
        assert (len(again), more) == (len(tools), [])


async def test_a_server_that_never_answers_hits_the_connect_timeout(
    silent_port: int, fixture_stdio: McpServerConfig
) -> None:
    slow = parse_mcp_server(
        {"type": "http", "url": f"http://127.0.0.1:{silent_port}/mcp", "timeout": 0.5},
        trusted=False,
    )
    async with loopback_pool(connect_timeout_s=30) as pool:
        tools, failures = await pool.connect({"slow": slow, "fx": fixture_stdio}, CONTEXT)
        assert codes(failures) == {"slow": "mcp_connect_timeout"}
        assert await call_ok(by_name(tools)["echo"], message="still here") == "fixture: still here"


async def test_a_tenants_timeout_cannot_outwait_the_servers(silent_port: int) -> None:
    """A user's config may shorten the connect timeout, never lengthen it: a silent server
    with `timeout: 100000` still fails at the pool's 0.5 s (the outer bound only catches a
    wait that ignored the cap)."""
    patient = parse_mcp_server(
        {"type": "http", "url": f"http://127.0.0.1:{silent_port}/mcp", "timeout": 100000},
        trusted=False,
    )
    async with loopback_pool(connect_timeout_s=0.5) as pool:
        _, failures = await asyncio.wait_for(pool.connect({"slow": patient}, CONTEXT), 60)
    assert codes(failures) == {"slow": "mcp_connect_timeout"}


async def test_untrusted_stdio_is_refused_without_starting_anything(
    fixture_stdio: McpServerConfig, time_server: McpServerConfig
) -> None:
    user_stdio = fixture_stdio.model_copy(update={"trusted": False})
    async with loopback_pool() as pool:
        tools, failures = await pool.connect({"mine": user_stdio, "time": time_server}, CONTEXT)
        assert codes(failures) == {"mine": "mcp_stdio_forbidden"}
        assert child_processes(marker(fixture_stdio)) == []
        assert "get_current_time" in by_name(tools)


async def test_unresolved_placeholders_fail_that_server_only(time_server: McpServerConfig) -> None:
    needs_secret = parse_mcp_server(
        {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "${{secrets.NOPE}}"}},
        trusted=False,
    )
    async with loopback_pool() as pool:
        tools, failures = await pool.connect({"s": needs_secret, "time": time_server}, CONTEXT)
        assert codes(failures) == {"s": "mcp_placeholder_unresolved"}
        assert "secrets.NOPE" in failures[0].message
        assert tools


async def test_secrets_never_appear_in_failure_messages() -> None:
    leaky = parse_mcp_server({"command": "/nonexistent/${{secrets.TOKEN}}/srv"}, trusted=True)
    async with loopback_pool() as pool:
        _, failures = await pool.connect({"leaky": leaky}, CONTEXT)
    assert codes(failures) == {"leaky": "mcp_connect_failed"}
    assert "hunter2" not in failures[0].message
    assert "/nonexistent/***/srv" in failures[0].message


async def test_a_hanging_tool_hits_the_call_timeout_and_the_session_lives_on(
    fixture_stdio: McpServerConfig,
) -> None:
    async with loopback_pool(call_timeout_s=0.5) as pool:
        tools, _ = await pool.connect({"fx": fixture_stdio}, CONTEXT)
        message = await call(by_name(tools)["hang"])
        assert message.status == "error"
        assert "[mcp_tool_timeout]" in message.text
        assert await call_ok(by_name(tools)["echo"], message="after") == "fixture: after"


async def test_a_server_crashing_mid_turn_turns_calls_into_errors_and_the_pool_survives(
    fixture_stdio: McpServerConfig, time_server: McpServerConfig
) -> None:
    # A long call timeout: the crash must be noticed, not waited out.
    async with loopback_pool(call_timeout_s=120) as pool:
        tools, _ = await pool.connect({"fx": fixture_stdio, "time": time_server}, CONTEXT)
        names = by_name(tools)
        crashed = await call(names["crash"])
        assert crashed.status == "error"
        assert "[mcp_server_disconnected]" in crashed.text
        after = await call(names["echo"], message="anyone?")
        assert after.status == "error"
        assert "[mcp_server_disconnected]" in after.text
        assert "[mcp_server_disconnected]" in (await call(names["pid"])).text
        assert await call_ok(names["get_current_time"], timezone="UTC")
    assert child_processes(marker(fixture_stdio)) == []


async def test_cancelling_the_turn_closes_sessions_and_ends_stdio_servers(
    fixture_stdio: McpServerConfig, time_server: McpServerConfig
) -> None:
    in_call = asyncio.Event()

    async def turn() -> None:
        async with loopback_pool() as pool:
            tools, _ = await pool.connect({"fx": fixture_stdio, "time": time_server}, CONTEXT)
            in_call.set()
            await call(by_name(tools)["hang"])

    task = asyncio.create_task(turn())
    await asyncio.wait_for(in_call.wait(), 30)
    assert len(child_processes(marker(fixture_stdio))) == 1
    assert len(child_processes(marker(time_server))) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert child_processes(marker(fixture_stdio)) == []
    assert child_processes(marker(time_server)) == []


async def test_cancelling_the_turn_while_connecting_ends_started_servers(
    silent_port: int, fixture_stdio: McpServerConfig
) -> None:
    slow = remote(f"http://127.0.0.1:{silent_port}/mcp")
    pool = loopback_pool(connect_timeout_s=60)
    task = asyncio.create_task(pool.connect({"slow": slow, "fx": fixture_stdio}, CONTEXT))
    await wait_for(lambda: len(child_processes(marker(fixture_stdio))) == 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await pool.aclose()
    assert child_processes(marker(fixture_stdio)) == []


async def test_a_name_connected_with_another_config_is_a_conflict(
    time_server: McpServerConfig, fixture_stdio: McpServerConfig
) -> None:
    async with loopback_pool() as pool:
        await pool.connect({"s": time_server}, CONTEXT)
        tools, failures = await pool.connect({"s": fixture_stdio}, CONTEXT)
        assert codes(failures) == {"s": "mcp_server_conflict"}
        assert tools == []
        assert child_processes(marker(fixture_stdio)) == []


async def test_tools_answer_with_error_text_after_the_pool_closed(
    time_server: McpServerConfig,
) -> None:
    async with loopback_pool() as pool:
        tools, _ = await pool.connect({"time": time_server}, CONTEXT)
    message = await call(by_name(tools)["get_current_time"], timezone="UTC")
    assert message.status == "error"
    assert "[mcp_server_disconnected]" in message.text
    with pytest.raises(McpError) as info:
        await pool.connect({"time": time_server}, CONTEXT)
    assert info.value.code == "mcp_pool_closed"
