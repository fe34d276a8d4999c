"""Code mode's three tools: `list_mcp_servers`, `search_mcp_tools`, `execute_code`.

Instead of every MCP tool's schema in every prompt, the model lists servers, searches tools
(names and one-liners; schemas only for what it asks about) and writes Python that calls them
through the generated `mcp_tools` module, run in the sandbox. One tool object serves every turn;
it finds its turn's `McpCodeMode` through the runtime.
"""

# No `from __future__ import annotations`: LangChain resolves the tool function's type hints.

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Protocol, cast

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from chat_shell.contracts import Event
from chat_shell.sandbox import SandboxRun, SandboxUnavailable, Workspace
from chat_shell.tools.mcp import McpFailure
from chat_shell.tools.mcp_code._bridge import MAX_ANSWER_BYTES, McpBridge
from chat_shell.tools.mcp_code._functions import McpFunction, search
from chat_shell.tools.mcp_code._module import MODULE_NAME, render_module
from chat_shell.tools.sandbox.skill_run import SandboxAccess, result_fields

LIST_MCP_SERVERS_TOOL = "list_mcp_servers"
SEARCH_MCP_TOOLS_TOOL = "search_mcp_tools"
EXECUTE_CODE_TOOL = "execute_code"
CODE_TOOL_NAMES = frozenset({LIST_MCP_SERVERS_TOOL, SEARCH_MCP_TOOLS_TOOL, EXECUTE_CODE_TOOL})
MAX_CODE_CHARS = 64 * 1024
MAX_QUERY_CHARS = 200
MOUNT = "/mcp"  # where the module, the code and the bridge socket appear in the sandbox
SOCKET_NAME = "bridge.sock"


class McpCodeMode:
    """Code mode for one turn: the MCP functions of the moment, and the sandbox to run code in.

    `functions()` is asked on every use, so tools of a skill loaded mid-turn join at once and
    the tools a skill replaces leave. Executions of one turn take turns on its workspace (kept
    for the turn, removed with its stack).
    """

    def __init__(
        self,
        access: SandboxAccess,
        stack: AsyncExitStack,
        *,
        functions: Callable[[], list[McpFunction]],
        failures: Callable[[], list[McpFailure]],
        emit: Callable[[Event], None],
    ) -> None:
        self._access = access
        self._stack = stack
        self.functions = functions
        self._failures = failures
        self._emit = emit
        self._workspace: Workspace | None = None
        self._lock = asyncio.Lock()

    def servers(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for function in self.functions():
            counts[function.server] = counts.get(function.server, 0) + 1
        return {
            "servers": [{"name": n, "tools": c} for n, c in counts.items()],
            "unavailable": [
                {"name": f.server, "code": f.code, "message": f.message}
                for f in self._failures()
                if f.server not in counts
            ],
            "usage": f"search_mcp_tools(query) to find functions, then execute_code with "
            f"`from {MODULE_NAME} import <function>`",
        }

    def search(self, query: str, detail: bool) -> list[dict[str, Any]]:
        return search(self.functions(), query, detail=detail)

    async def execute(self, code: str) -> dict[str, Any]:
        functions = self.functions()
        bridge = McpBridge(
            {f.name: f for f in functions},
            budget=self._access.mcp_call_budget,
            call_timeout_s=self._access.mcp_call_timeout_s,
            emit=self._emit,
        )
        async with self._lock:
            workspace = self._workspace_for_turn()
            folder = Path(tempfile.mkdtemp(prefix="mcp-", dir=workspace.scratch_dir))
            try:
                self._access.sandbox.give(folder)  # only runs (and root) enter it
                source = render_module(
                    functions, socket=f"{MOUNT}/{SOCKET_NAME}", max_answer=MAX_ANSWER_BYTES
                )
                _write(folder / f"{MODULE_NAME}.py", source)
                _write(folder / "main.py", code)
                run = SandboxRun(
                    f"exec python3 {MOUNT}/main.py",
                    workspace,
                    limits=self._access.sandbox.limits,
                    mounts=((folder, MOUNT),),
                    env={"PYTHONPATH": MOUNT},
                )
                async with bridge.serving(folder / SOCKET_NAME, self._access.sandbox.give):
                    result = await self._access.sandbox.run(run)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        return {
            **result_fields(result),
            "mcp_calls": [
                {"tool": c.tool, "ok": c.ok, **({"code": c.code} if c.code else {})}
                for c in bridge.calls
            ],
        }

    def _workspace_for_turn(self) -> Workspace:
        if self._workspace is None:
            self._workspace = self._access.sandbox.new_workspace()
            self._stack.callback(self._workspace.close)
        return self._workspace


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o644)


class CodeModeHost(Protocol):
    mcp_code: McpCodeMode | None


class HostContext(Protocol):
    @property
    def session(self) -> CodeModeHost: ...


def _mode(runtime: ToolRuntime) -> McpCodeMode:
    mode = cast(HostContext, runtime.context).session.mcp_code
    if mode is None:
        raise ToolException("MCP code mode is not on in this conversation.")
    return mode


async def _list(runtime: ToolRuntime) -> str:
    return json.dumps(_mode(runtime).servers(), ensure_ascii=False)


async def _search(query: str, runtime: ToolRuntime, detail: bool = False) -> str:
    if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
        raise ToolException(f"query must be text of at most {MAX_QUERY_CHARS} characters.")
    found = _mode(runtime).search(query, bool(detail))
    return json.dumps({"functions": found, "module": MODULE_NAME}, ensure_ascii=False)


async def _execute(code: str, runtime: ToolRuntime) -> str:
    if not isinstance(code, str) or not code.strip():
        raise ToolException("code must be non-empty Python source.")
    if len(code) > MAX_CODE_CHARS:
        raise ToolException(f"code is longer than {MAX_CODE_CHARS} characters.")
    try:
        result = await _mode(runtime).execute(code)
    except SandboxUnavailable as exc:
        raise ToolException(exc.message) from exc
    return json.dumps(result, ensure_ascii=False)


def _tool(name: str, description: str, parameters: dict[str, Any], coroutine: Any) -> BaseTool:
    return StructuredTool(
        name=name,
        description=description,
        args_schema={"type": "object", **parameters},  # checked by the functions themselves
        coroutine=coroutine,
        handle_tool_error=True,
    )


LIST_MCP_SERVERS = _tool(
    LIST_MCP_SERVERS_TOOL,
    "List the MCP servers whose tools your code can call, with their tool counts.",
    {"properties": {}},
    _list,
)
SEARCH_MCP_TOOLS = _tool(
    SEARCH_MCP_TOOLS_TOOL,
    f"Find MCP tools by words or exact name: returns Python function names of the "
    f"`{MODULE_NAME}` module with one-line descriptions; an exact name (or detail=true for "
    "the best few) also returns the input schema.",
    {
        "properties": {
            "query": {"type": "string", "description": "Words, or a function's exact name."},
            "detail": {"type": "boolean", "description": "Input schemas of the best matches."},
        },
        "required": ["query"],
    },
    _search,
)
EXECUTE_CODE = _tool(
    EXECUTE_CODE_TOOL,
    f"Run Python 3 in an isolated sandbox (no network). `from {MODULE_NAME} import <function>` "
    "calls MCP tools by keyword arguments (failures raise McpToolError). The working "
    "directory is a workspace kept for this turn. Print what you need: returns exit_code, "
    "stdout, stderr and the MCP calls made.",
    {
        "properties": {"code": {"type": "string", "description": "Python source to run."}},
        "required": ["code"],
    },
    _execute,
)
CODE_TOOLS: Sequence[BaseTool] = (LIST_MCP_SERVERS, SEARCH_MCP_TOOLS, EXECUTE_CODE)
