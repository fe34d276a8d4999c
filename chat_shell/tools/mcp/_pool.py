"""The MCP sessions of one turn: connect in parallel, reuse per server, close on exit."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from langchain_core.tools import BaseTool

from chat_shell.net import EgressPolicy
from chat_shell.tools.mcp._config import McpServerConfig, check_stdio_allowed
from chat_shell.tools.mcp._errors import SERVER_CONFLICT, McpError
from chat_shell.tools.mcp._placeholders import secret_values, substitute_placeholders
from chat_shell.tools.mcp._session import ServerSession, egress_applies

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64  # what OpenAI-style function calling accepts: ^[A-Za-z0-9_-]{1,64}$

GHOST_SCOPE = ""  # the turn's own servers (global and Ghost, merged); a skill's scope is its name
_Key = tuple[str, str]  # (scope, server name)


@dataclass(frozen=True)
class McpFailure:
    """A server that could not be used this turn (reported as an event, never raised)."""

    server: str
    code: str
    message: str


def _clean(name: str) -> str:
    return _NOT_IN_NAME.sub("_", name)[:_MAX_NAME] or "tool"


class McpSessionPool:
    """The MCP sessions of one turn; use it as an async context manager around the turn.

    Servers are connected per scope: the Ghost's (`GHOST_SCOPE`, global and Ghost servers
    already merged) and each skill's (its name). Each (scope, server) gets one session, reused by
    every call of its tools until the pool closes (on exit, including cancellation).

    Tool names are the servers' own (characters outside `[A-Za-z0-9_-]` become `_`); a name
    already taken (by an earlier server, another server in the same batch, or `reserved_names`)
    becomes `<server>_<tool>` for every server that brings it in that batch, so names once handed
    out never change within the turn. Precedence skill > Ghost: a skill's server replaces the
    Ghost's server of the same name, so its tools may take the names of that server's tools
    (the caller shows one or the other, see `shadowed`).
    """

    def __init__(
        self,
        *,
        connect_timeout_s: float = 30.0,
        call_timeout_s: float = 60.0,
        close_timeout_s: float = 5.0,
        egress: EgressPolicy | None = None,
    ) -> None:
        # Tenant-chosen servers connect only where this policy allows (default: the strict one).
        self._egress = egress or EgressPolicy()
        self._connect_timeout_s = connect_timeout_s
        self._call_timeout_s = call_timeout_s
        self._close_timeout_s = close_timeout_s
        self._sessions: dict[_Key, ServerSession] = {}
        self._tools: dict[_Key, list[BaseTool]] = {}
        self._failed: dict[_Key, McpServerConfig] = {}
        self._failures: list[McpFailure] = []
        self._closed = False
        # Parallel load_skill calls may bring the same server: serialize so the second
        # caller sees the first one's session (connected or failed) instead of racing it.
        self._connecting = asyncio.Lock()
        self.sessions_opened = 0

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def tools(self) -> list[BaseTool]:
        """Every tool of every connected server, in connection order."""
        return [tool for tools in self._tools.values() for tool in tools]

    @property
    def failures(self) -> list[McpFailure]:
        """Every failure reported so far this turn."""
        return list(self._failures)

    def server_of(self, tool: BaseTool) -> tuple[str, str] | None:
        """(scope, server name) of a tool this pool handed out; None for any other tool."""
        return next(
            (key for key, tools in self._tools.items() if any(t is tool for t in tools)), None
        )

    def shadowed(self, server_names: Collection[str]) -> list[BaseTool]:
        """The Ghost-scope tools that a skill declaring `server_names` replaces."""
        return [t for n in server_names for t in self._tools.get((GHOST_SCOPE, n), [])]

    async def connect(
        self,
        servers: Mapping[str, McpServerConfig],
        context: Mapping[str, Any],
        *,
        scope: str = GHOST_SCOPE,
        reserved_names: Collection[str] = (),
    ) -> tuple[list[BaseTool], list[McpFailure]]:
        """Connect the servers of `scope` not connected yet, in parallel, each within its timeout.

        Returns the tools of every requested server that is connected (including ones connected
        by an earlier call) and the failures of this call. A server that failed earlier with the
        same config is not retried this turn; a name connected in the same scope with a
        different config is a `mcp_server_conflict` failure (the live session is kept).
        """
        async with self._connecting:
            return await self._connect(servers, context, scope, reserved_names)

    async def _connect(
        self,
        servers: Mapping[str, McpServerConfig],
        context: Mapping[str, Any],
        scope: str,
        reserved_names: Collection[str],
    ) -> tuple[list[BaseTool], list[McpFailure]]:
        if self._closed:
            raise McpError("the MCP session pool is closed", code="mcp_pool_closed")
        failures: list[McpFailure] = []
        started: list[tuple[_Key, ServerSession]] = []
        conflicts: set[str] = set()
        for name, config in servers.items():
            key = (scope, name)
            if self._failed.get(key) == config:
                continue
            try:
                check_stdio_allowed(name, config)
                resolved = substitute_placeholders(config, context)
            except McpError as exc:
                failures.append(self._fail(key, config, exc.code, exc.message))
                continue
            existing = self._sessions.get(key)
            if existing is None:
                session = ServerSession(
                    name,
                    resolved,
                    call_timeout_s=self._call_timeout_s,
                    secrets=secret_values(config, context),
                    egress=self._egress if egress_applies(config) else None,
                    scope="ghost" if scope == GHOST_SCOPE else "skill",
                )
                self.sessions_opened += 1
                self._sessions[key] = session
                started.append((key, session))
            elif existing.config != resolved:
                message = f"MCP server {name!r} is already connected with another config"
                failures.append(McpFailure(name, SERVER_CONFLICT, message))
                self._failures.append(failures[-1])
                conflicts.add(name)

        outcomes = await asyncio.gather(*(s.wait_ready(self._wait_s(s.config)) for _, s in started))
        connected: list[tuple[_Key, ServerSession]] = []
        for (key, session), outcome in zip(started, outcomes, strict=True):
            if outcome is None:
                connected.append((key, session))
                continue
            del self._sessions[key]
            failures.append(self._fail(key, servers[key[1]], *outcome))
        # Precedence: the Ghost's servers this scope replaces give their tool names up to it.
        replaced = {(GHOST_SCOPE, n) for n in servers} if scope != GHOST_SCOPE else set()
        self._name_tools(connected, reserved_names, replaced)

        tools = [
            tool
            for name in servers
            if (scope, name) in self._tools and name not in conflicts
            for tool in self._tools[(scope, name)]
        ]
        return tools, failures

    def _wait_s(self, config: McpServerConfig) -> float:
        """A config's own connect timeout; a tenant's may shorten the server's, not lengthen it."""
        if config.timeout is None:
            return self._connect_timeout_s
        return config.timeout if config.trusted else min(config.timeout, self._connect_timeout_s)

    def _fail(self, key: _Key, config: McpServerConfig, code: str, message: str) -> McpFailure:
        failure = McpFailure(key[1], code, message)
        self._failed[key] = config
        self._failures.append(failure)
        return failure

    def _name_tools(
        self,
        connected: list[tuple[_Key, ServerSession]],
        reserved: Collection[str],
        replaced: Collection[_Key],
    ) -> None:
        """Name the tools of newly connected sessions; names held only by `replaced` sessions
        may be reused."""
        taken = set(reserved) | {
            t.name for key, tools in self._tools.items() if key not in replaced for t in tools
        }
        batch: dict[str, int] = {}
        for _, session in connected:
            for name in {_clean(t.name) for t in session.tools}:
                batch[name] = batch.get(name, 0) + 1
        for key, session in connected:
            named: list[BaseTool] = []
            for tool in session.tools:
                name = _clean(tool.name)
                if name in taken or batch[name] > 1:
                    name = _clean(f"{session.name}_{name}")
                unique, n = name, 2
                while unique in taken:
                    unique, n = f"{name[: _MAX_NAME - 4]}_{n}", n + 1
                taken.add(unique)
                # The MCP call uses the server's own name (captured by the adapter), so
                # renaming the LangChain tool is safe.
                named.append(
                    tool if unique == tool.name else tool.model_copy(update={"name": unique})
                )
            self._tools[key] = named

    async def aclose(self) -> None:
        """Close every session (idempotent). Stragglers are cancelled after `close_timeout_s`."""
        self._closed = True
        sessions = list(self._sessions.values())
        self._sessions.clear()
        try:
            await asyncio.gather(*(s.close(self._close_timeout_s) for s in sessions))
        finally:
            # Cancelled again while closing: still make every runner wind its session down.
            for session in sessions:
                session.cancel()
