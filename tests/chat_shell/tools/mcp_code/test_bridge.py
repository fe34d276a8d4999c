"""The bridge treats every byte from the sandbox as hostile: frames, JSON, names, budget, time."""

from __future__ import annotations

import asyncio
import json
import os
import struct
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import StructuredTool, ToolException

from chat_shell.contracts import McpCallEvent
from chat_shell.tools.mcp_code._bridge import MAX_REQUEST_BYTES, McpBridge
from chat_shell.tools.mcp_code._functions import as_functions

never = asyncio.Event()


def _give(path: Path) -> None:
    os.chmod(path, 0o600)  # as the sandbox's `give` does, for a run of this process's user


async def _add(a: int, b: int) -> str:
    return json.dumps({"sum": a + b})


async def _hang() -> str:
    await never.wait()
    return "unreachable"


async def _fail() -> str:
    raise ToolException("[mcp_tool_failed] broken on purpose")


def _tool(name: str, coroutine: Any, properties: dict[str, Any]) -> StructuredTool:
    return StructuredTool(
        name=name,
        description=f"{name} tool",
        args_schema={"type": "object", "properties": properties},
        coroutine=coroutine,
        handle_tool_error=True,
    )


TOOLS = [
    (_tool("add", _add, {"a": {"type": "integer"}, "b": {"type": "integer"}}), "calc"),
    (_tool("hang", _hang, {}), "calc"),
    (_tool("fail", _fail, {}), "calc"),
]


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def send_raw(self, data: bytes) -> dict[str, Any]:
        self.writer.write(data)
        await self.writer.drain()
        (size,) = struct.unpack(">I", await self.reader.readexactly(4))
        answer: dict[str, Any] = json.loads(await self.reader.readexactly(size))
        return answer

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        body = json.dumps({"tool": tool, "arguments": arguments}).encode()
        return await self.send_raw(struct.pack(">I", len(body)) + body)

    async def closed(self) -> bool:
        return await self.reader.read(1) == b""


@pytest.fixture
async def served() -> AsyncIterator[tuple[McpBridge, list[McpCallEvent], Path]]:
    events: list[McpCallEvent] = []
    functions = {f.name: f for f in as_functions(TOOLS)}
    bridge = McpBridge(functions, budget=3, call_timeout_s=0.2, emit=events.append)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bridge.sock"
        async with bridge.serving(path, _give):
            yield bridge, events, path


_clients: list[Client] = []


async def connect(path: Path) -> Client:
    client = Client(*await asyncio.open_unix_connection(str(path)))
    _clients.append(client)
    return client


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    yield
    while _clients:
        writer = _clients.pop().writer
        writer.close()
        await writer.wait_closed()


async def test_a_call_answers_the_tools_result_and_is_audited(
    served: tuple[McpBridge, list[McpCallEvent], Path],
) -> None:
    bridge, events, path = served
    client = await connect(path)
    assert await client.call("add", a=2, b=3) == {"ok": True, "result": {"sum": 5}}
    (event,) = events
    assert (event.tool, event.server, event.ok, json.loads(event.arguments)) == (
        "add",
        "calc",
        True,
        {"a": 2, "b": 3},
    )


async def test_a_tool_outside_the_turns_set_is_an_error_and_the_connection_goes_on(
    served: tuple[McpBridge, list[McpCallEvent], Path],
) -> None:
    _, events, path = served
    client = await connect(path)
    answer = await client.call("read_secrets")
    assert answer["error"]["code"] == "mcp_unknown_tool"
    assert (await client.call("add", a=1, b=1))["ok"]
    assert [e.tool for e in events] == ["add"]


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">I", MAX_REQUEST_BYTES + 1),  # only the header: never read further
        struct.pack(">I", 4) + b"\xff\xfe{}",
        struct.pack(">I", 2) + b"[]",
        struct.pack(">I", 24) + b'{"tool": 1, "arguments"}',
        struct.pack(">I", 35) + b'{"tool": "add", "arguments": [1,2]}',
        struct.pack(">I", 39) + b'{"tool": "add", "arguments": {}, "x":1}',
        struct.pack(">I", 200_000) + b"[" * 200_000,  # json.loads: RecursionError
    ],
    ids=[
        "oversized",
        "not-utf8",
        "not-an-object",
        "not-json",
        "arguments-list",
        "extra-key",
        "nested-too-deep",
    ],
)
async def test_a_bad_frame_gets_an_error_and_the_connection_is_closed(
    served: tuple[McpBridge, list[McpCallEvent], Path], frame: bytes
) -> None:
    _, events, path = served
    client = await connect(path)
    answer = await client.send_raw(frame)
    assert answer["error"]["code"] == "mcp_bridge_bad_frame"
    assert await client.closed()
    assert events == []


async def test_calls_past_the_budget_are_refused_and_audited(
    served: tuple[McpBridge, list[McpCallEvent], Path],
) -> None:
    _, events, path = served
    client = await connect(path)
    answers = [await client.call("add", a=i, b=0) for i in range(4)]
    assert [a["ok"] for a in answers] == [True, True, True, False]
    assert answers[3]["error"]["code"] == "mcp_call_budget_exceeded"
    assert [(e.ok, e.code) for e in events][-1] == (False, "mcp_call_budget_exceeded")


async def test_a_call_past_its_timeout_is_an_error(
    served: tuple[McpBridge, list[McpCallEvent], Path],
) -> None:
    _, events, path = served
    client = await connect(path)
    answer = await client.call("hang")
    assert answer["error"]["code"] == "mcp_tool_timeout"
    assert (events[0].tool, events[0].code) == ("hang", "mcp_tool_timeout")


async def test_a_tool_error_keeps_its_code(
    served: tuple[McpBridge, list[McpCallEvent], Path],
) -> None:
    _, _, path = served
    client = await connect(path)
    answer = await client.call("fail")
    assert answer["error"] == {"code": "mcp_tool_failed", "message": "broken on purpose"}


async def test_closing_the_bridge_ends_open_connections_and_removes_the_socket() -> None:
    bridge = McpBridge({}, budget=1, call_timeout_s=1, emit=lambda e: None)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bridge.sock"
        async with bridge.serving(path, _give):
            client = await connect(path)
            assert not (await client.call("any"))["ok"]  # accepted and served
        assert await client.closed()
        assert not path.exists()
