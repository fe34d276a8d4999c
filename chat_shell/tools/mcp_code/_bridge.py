"""The bridge: a Unix socket served by the worker, through which sandboxed code calls MCP tools.

Everything arriving on the socket is hostile. Protocol: a frame is a 4-byte big-endian length
and that many bytes of UTF-8 JSON. A request is `{"tool": str, "arguments": object}`; the
answer is `{"ok": true, "result": ...}` or `{"ok": false, "error": {"code", "message"}}`.
A frame over `MAX_REQUEST_BYTES`, or one that is not such JSON, gets an error answer and the
connection is closed. Only the execution's own functions can be called, each within the
per-call timeout, at most `budget` calls per execution; every call is reported (`McpCallEvent`).
Calls go through the turn's own tools, so its MCP sessions, precedence, placeholders, egress
policy and secret masking apply unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from chat_shell.contracts import McpCallEvent
from chat_shell.tools.mcp_code._functions import McpFunction

MAX_REQUEST_BYTES = 256 * 1024
MAX_ANSWER_BYTES = 1024 * 1024
MAX_CONNECTIONS = 8  # open at once; more are answered with an error and closed
ARGUMENT_SUMMARY_CHARS = 300
_HEADER = struct.Struct(">I")

BAD_FRAME = "mcp_bridge_bad_frame"
BUSY = "mcp_bridge_busy"
UNKNOWN_TOOL = "mcp_unknown_tool"
BUDGET_EXCEEDED = "mcp_call_budget_exceeded"
TOOL_TIMEOUT = "mcp_tool_timeout"
TOOL_FAILED = "mcp_tool_failed"


class _BadFrame(Exception):
    pass


@dataclass
class BridgeCall:
    tool: str
    ok: bool
    code: str | None
    duration_ms: float


@dataclass
class McpBridge:
    """Serves one execution's calls; `calls` records them in order."""

    functions: Mapping[str, McpFunction]  # by tool name (the name the module sends)
    budget: int
    call_timeout_s: float
    emit: Callable[[McpCallEvent], None]
    calls: list[BridgeCall] = field(default_factory=list)
    _used: int = 0
    _open: int = 0

    @contextlib.asynccontextmanager
    async def serving(self, path: Path, give: Callable[[Path], None]) -> AsyncIterator[None]:
        """Listen on `path` for the block's length, connectable by whom `give` (the sandbox's
        `give`) hands it to; on exit stop listening and end every connection and call still
        running."""
        handlers: set[asyncio.Task[None]] = set()
        stopped = False

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            if stopped:  # accepted just before the end, started after it
                writer.close()
                return
            handlers.add(task)
            try:
                await self._connection(reader, writer)
            except asyncio.CancelledError:
                # Only `serving` cancels these; asyncio's server callback would report it.
                pass
            finally:
                handlers.discard(task)
                writer.close()

        server = await asyncio.start_unix_server(handle, path=str(path), limit=64 * 1024)
        try:
            give(path)
            yield
        finally:
            stopped = True
            server.close()
            for task in list(handlers):
                task.cancel()
            if handlers:
                await asyncio.wait(set(handlers))
            with contextlib.suppress(OSError):
                os.unlink(path)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= MAX_CONNECTIONS:
            await _send(writer, _error(BUSY, f"at most {MAX_CONNECTIONS} connections at once"))
            return
        self._open += 1
        try:
            while True:
                try:
                    request = await _read_request(reader)
                except asyncio.IncompleteReadError:
                    return  # the client is done
                except _BadFrame as exc:
                    await _send(writer, _error(BAD_FRAME, str(exc)))
                    return
                await _send(writer, await self._call(*request))
        except (ConnectionError, OSError):
            return
        finally:
            self._open -= 1

    async def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        function = self.functions.get(name)
        if function is None:
            return _error(UNKNOWN_TOOL, f"no MCP tool {name[:100]!r} in this conversation")
        if self._used >= self.budget:
            answer = _error(BUDGET_EXCEEDED, f"at most {self.budget} MCP calls per execution")
            self._record(function, arguments, answer, 0.0)
            return answer
        self._used += 1
        started = time.perf_counter()
        call = {"type": "tool_call", "id": f"bridge-{self._used}", "name": name, "args": arguments}
        try:
            message = await asyncio.wait_for(function.tool.ainvoke(call), self.call_timeout_s)
        except TimeoutError:
            answer = _error(TOOL_TIMEOUT, f"{name} did not answer within {self.call_timeout_s:g}s")
        except Exception as exc:  # arguments the tool's schema refuses, among others
            answer = _error(TOOL_FAILED, f"{name} failed: {type(exc).__name__}: {exc}"[:2000])
        else:
            answer = _answer(message)
        duration_ms = (time.perf_counter() - started) * 1000
        self._record(function, arguments, answer, duration_ms)
        return answer

    def _record(
        self,
        function: McpFunction,
        arguments: dict[str, Any],
        answer: dict[str, Any],
        duration_ms: float,
    ) -> None:
        ok = bool(answer["ok"])
        code = None if ok else str(answer["error"]["code"])
        self.calls.append(BridgeCall(function.name, ok, code, round(duration_ms, 1)))
        summary = json.dumps(arguments, ensure_ascii=False)
        if len(summary) > ARGUMENT_SUMMARY_CHARS:
            summary = summary[: ARGUMENT_SUMMARY_CHARS - 1] + "…"
        self.emit(
            McpCallEvent(
                tool=function.name,
                server=function.server,
                arguments=summary,
                ok=ok,
                code=code,
                duration_ms=round(duration_ms, 1),
            )
        )


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, Any]]:
    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
    if size > MAX_REQUEST_BYTES:
        raise _BadFrame(f"request of {size} bytes; at most {MAX_REQUEST_BYTES}")
    body = await reader.readexactly(size)
    try:
        request = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: nested too deep
        raise _BadFrame("a request must be UTF-8 JSON, nested at most ~1000 levels") from None
    if not isinstance(request, dict) or set(request) - {"tool", "arguments"}:
        raise _BadFrame('a request is {"tool": name, "arguments": {...}}')
    tool, arguments = request.get("tool"), request.get("arguments", {})
    if not isinstance(tool, str) or not isinstance(arguments, dict):
        raise _BadFrame('a request is {"tool": name, "arguments": {...}}')
    return tool, arguments


async def _send(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
    body = json.dumps(answer, ensure_ascii=False).encode()
    if len(body) > MAX_ANSWER_BYTES:
        body = json.dumps(_error(TOOL_FAILED, "the tool's answer is too large")).encode()
    writer.write(_HEADER.pack(len(body)) + body)
    await writer.drain()


def _error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


def _answer(message: Any) -> dict[str, Any]:
    """The tool's result for code: structured content if any, else its text (JSON parsed)."""
    if not isinstance(message, ToolMessage):
        return {"ok": True, "result": str(message)}
    text = message.text
    if message.status == "error":
        code, _, rest = text.partition("] ")
        if code.startswith("[") and rest:
            return _error(code[1:], rest)
        return _error(TOOL_FAILED, text)
    artifact = message.artifact
    if isinstance(artifact, dict) and artifact.get("structured_content") is not None:
        return {"ok": True, "result": artifact["structured_content"]}
    try:
        return {"ok": True, "result": json.loads(text)}
    except ValueError:
        return {"ok": True, "result": text}
