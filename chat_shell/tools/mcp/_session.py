"""One MCP server's session for one turn, owned by a dedicated background task.

The transports (anyio task groups, the stdio subprocess) must be entered and exited in the same
task. A turn connects servers from whichever task runs the agent or a tool (a skill loaded
mid-turn), and closes them from another, so each session lives in its own runner task: it
opens the session, lists the tools, parks until told to stop, then closes it. Tool calls
from any task use the session meanwhile; each is raced against a timeout and the runner's end,
and every failure becomes tool error text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio
import httpx
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.interceptors import MCPToolCallRequest, MCPToolCallResult
from langchain_mcp_adapters.sessions import Connection
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp.shared._httpx_utils import McpHttpClientFactory
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED, AudioContent, CallToolResult, TextContent

from chat_shell.net import (
    REFUSED_HOST,
    EgressForbidden,
    EgressPolicy,
    egress_client,
    error_body_logger,
    find_cause,
    log_secrets,
    redact,
)
from chat_shell.observe import McpScope, observer, tracer
from chat_shell.tools.mcp._config import McpServerConfig
from chat_shell.tools.mcp._errors import (
    CONNECT_FAILED,
    CONNECT_TIMEOUT,
    EGRESS_FORBIDDEN,
    SERVER_DISCONNECTED,
    TOOL_FAILED,
    TOOL_TIMEOUT,
)
from chat_shell.tools.mcp._placeholders import url_takes_tenant_values

logger = logging.getLogger(__name__)

_Handler = Callable[[MCPToolCallRequest], Awaitable[MCPToolCallResult]]


def describe(exc: BaseException) -> str:
    """A readable one-liner, unwrapping the exception groups anyio transports raise."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _client_factory(
    name: str, egress: EgressPolicy | None, secrets: Iterable[str]
) -> McpHttpClientFactory:
    """HTTP clients for one server: egress-checked when `egress` is given, and logging what
    the server answers with an error status (the tenant sees the status only)."""

    def create(
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        options: dict[str, Any] = {
            "headers": headers,
            # The MCP SDK's defaults: a server may hold a response stream open for long.
            "timeout": timeout if timeout is not None else httpx.Timeout(30.0, read=300.0),
            "auth": auth,
            "event_hooks": {"response": [error_body_logger(f"MCP server {name!r}", secrets)]},
        }
        if egress is not None:
            return egress_client(egress, **options)
        return httpx.AsyncClient(**options, follow_redirects=False)

    return create


def failure(
    name: str, config: McpServerConfig, exc: BaseException, secrets: Iterable[str] = ()
) -> tuple[str, str]:
    """(code, message) for a server that failed; what an HTTP server answered is logged only.

    HTTP errors name the server and a status code or an error type, never the URL (an
    operator's URL may hold credentials) or the answer. A stdio server is the operator's own
    local process: its error text is kept. Known secret values are masked throughout.
    """
    if find_cause(exc, EgressForbidden) is not None:
        return EGRESS_FORBIDDEN, f"MCP server {name!r}: {REFUSED_HOST}"
    if config.transport == "stdio":
        return CONNECT_FAILED, redact(describe(exc), secrets)
    status = find_cause(exc, httpx.HTTPStatusError)
    if status is not None:  # the body was logged as it arrived (`_client_factory`)
        code = status.response.status_code
        return CONNECT_FAILED, f"MCP server {name!r} answered HTTP {code}"
    cause = find_cause(exc, httpx.TransportError) or exc
    logger.warning("MCP server %r failed: %s", name, redact(describe(exc), secrets))
    return CONNECT_FAILED, f"MCP server {name!r} failed: {type(cause).__name__}"


def egress_applies(config: McpServerConfig) -> bool:
    """Whether connections to the server must pass the egress policy: a tenant chose it (a
    user's Ghost or skill), or its URL takes a value a tenant controls."""
    return not config.trusted or url_takes_tenant_values(config)


def to_connection(
    config: McpServerConfig, *, client_factory: McpHttpClientFactory | None = None
) -> Connection:
    """The adapters' connection dict for a (substituted) config; `client_factory` makes the
    HTTP clients of sse and streamable_http servers."""
    if config.transport == "stdio":
        assert config.command is not None  # guaranteed by McpServerConfig validation
        # env=None lets the SDK pass its safe default environment (PATH, HOME, ...).
        return {
            "transport": "stdio",
            "command": config.command,
            "args": list(config.args),
            "env": dict(config.env) or None,
        }
    assert config.url is not None
    if config.transport == "sse":
        return {
            "transport": "sse",
            "url": config.url,
            "headers": dict(config.headers),
            "httpx_client_factory": client_factory,
        }
    return {
        "transport": "streamable_http",
        "url": config.url,
        "headers": dict(config.headers),
        "httpx_client_factory": client_factory,
    }


def _is_connection_lost(exc: Exception) -> bool:
    if isinstance(exc, McpError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError)


def _error_result(code: str, message: str) -> CallToolResult:
    # An isError result makes the adapter's tool return a ToolMessage with status="error".
    return CallToolResult(
        content=[TextContent(type="text", text=f"[{code}] {message}")], isError=True
    )


def _convertible(result: MCPToolCallResult) -> MCPToolCallResult:
    # The adapter raises (killing the turn) on content it cannot convert: replace it by text.
    if isinstance(result, CallToolResult) and any(
        isinstance(c, AudioContent) for c in result.content
    ):
        content = [
            TextContent(type="text", text="[audio content omitted]")
            if isinstance(c, AudioContent)
            else c
            for c in result.content
        ]
        return result.model_copy(update={"content": content})
    return result


class ServerSession:
    """The session of one server: start, wait until ready, call tools, stop."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        call_timeout_s: float,
        secrets: Iterable[str] = (),
        egress: EgressPolicy | None = None,
        scope: McpScope = "ghost",
    ) -> None:
        """`egress`: the policy every connection to this server must pass; None for servers
        the operator or an admin chose. `scope`: whose server it is, for metrics."""
        self.name = name
        self.scope: McpScope = scope
        self.config = config
        self.tools: list[BaseTool] = []
        self._call_timeout_s = call_timeout_s
        self._secrets = frozenset(secrets)
        self._egress = egress
        factory = _client_factory(name, egress, self._secrets)
        self._client = MultiServerMCPClient({name: to_connection(config, client_factory=factory)})
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._ended: str | None = None
        self._ended_code = SERVER_DISCONNECTED
        self._runner = asyncio.create_task(self._run(), name=f"mcp-session:{name}")

    async def _run(self) -> None:
        log_secrets(self._secrets)  # this task's and its connections' egress log lines
        try:
            if self._egress is not None and self.config.url is not None:
                self._egress.check_url(self.config.url)  # a literal address: refuse at once
            async with self._client.session(self.name) as session:
                self.tools = await load_mcp_tools(
                    session, server_name=self.name, tool_interceptors=[self._intercept]
                )
                self._ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            code, self._ended = failure(self.name, self.config, exc, self._secrets)
            if code == EGRESS_FORBIDDEN:
                self._ended_code = code
            if self._ready.done():
                logger.warning("MCP server %r disconnected: %s", self.name, self._ended)
            else:
                self._ready.set_exception(exc)
        finally:
            if not self._ready.done():  # cancelled before it was ready
                self._ready.cancel()
            if self._ended is None:
                self._ended = "the session was cancelled"

    async def wait_ready(self, timeout_s: float) -> tuple[str, str] | None:
        """None once connected, else (code, redacted message); a failed session is stopped."""
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout_s)
        except TimeoutError:
            await self.close(grace_s=0)
            return CONNECT_TIMEOUT, f"no answer within {timeout_s:g}s"
        except Exception as exc:
            return failure(self.name, self.config, exc, self._secrets)
        return None

    async def close(self, grace_s: float) -> None:
        """Ask the runner to close the session; cancel it if it does not finish in time."""
        self._ended = self._ended or "the session is closed"
        self._stop.set()
        # Still handshaking: it would not notice the stop; there is nothing to close politely.
        if grace_s > 0 and self._ready.done():
            await asyncio.wait({self._runner}, timeout=grace_s)
        if not self._runner.done():
            self._runner.cancel()
            await asyncio.wait({self._runner})

    def cancel(self) -> None:
        """Cancel the runner (it still closes the transport, killing a stdio process)."""
        self._runner.cancel()

    async def _intercept(self, request: MCPToolCallRequest, handler: _Handler) -> MCPToolCallResult:
        with tracer.start_as_current_span("mcp.call", attributes={"mcp.scope": self.scope}):
            result = await self._call(request, handler)
        observer().mcp_call(self.scope, error=bool(getattr(result, "isError", False)))
        return result

    async def _call(self, request: MCPToolCallRequest, handler: _Handler) -> MCPToolCallResult:
        if self._stop.is_set() or self._runner.done():
            return _error_result(self._ended_code, self._disconnected())

        async def run_call() -> MCPToolCallResult:
            return await handler(request)

        call = asyncio.create_task(run_call())
        try:
            done, _ = await asyncio.wait(
                {call, self._runner},
                timeout=self._call_timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            if not call.done():
                call.cancel()
                await asyncio.wait({call})
            if call.done() and not call.cancelled():
                call.exception()  # mark retrieved: a late failure is not an unhandled error
        if call in done:
            try:
                return _convertible(call.result())
            except Exception as exc:
                if isinstance(exc, McpError) or self.config.transport == "stdio":
                    # The server's own error for the model, as a tool result would be.
                    message = redact(describe(exc), self._secrets)
                else:
                    code, message = failure(self.name, self.config, exc, self._secrets)
                    if code == EGRESS_FORBIDDEN:  # the server moved out of reach: stop
                        self._ended, self._ended_code = message, code
                        self._stop.set()
                        return _error_result(code, message)
                if _is_connection_lost(exc):
                    # The transport is gone (a stdio server died): close it, fail fast from now.
                    self._ended = f"connection lost during {request.name}: {message}"
                    self._stop.set()
                    logger.warning("MCP server %r disconnected: %s", self.name, self._ended)
                    return _error_result(SERVER_DISCONNECTED, self._disconnected())
                return _error_result(TOOL_FAILED, f"{request.name} failed: {message}")
        if self._runner in done:
            return _error_result(self._ended_code, self._disconnected())
        return _error_result(
            TOOL_TIMEOUT, f"{request.name} did not answer within {self._call_timeout_s:g}s"
        )

    def _disconnected(self) -> str:
        return f"MCP server {self.name!r} is not connected: {self._ended or 'unknown reason'}"
