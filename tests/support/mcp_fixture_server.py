"""A small MCP server for the pool tests, on the project's own `mcp` 1.x FastMCP.

Run as a script: `python mcp_fixture_server.py stdio` or `python mcp_fixture_server.py http PORT`.
Its tools expose what the tests must observe from the server side: which process answers
(`pid`), the environment and headers it received, a call that never returns (`hang`) and a
crash in the middle of a call (`crash`).
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.fastmcp import Context, FastMCP

port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
server = FastMCP("fixture", host="127.0.0.1", port=port, log_level="WARNING")


@server.tool()
def echo(message: str) -> str:
    """Echo the message, marked as coming from the fixture server."""
    return f"fixture: {message}"


@server.tool()
def pid() -> int:
    """The process id of this server."""
    return os.getpid()


@server.tool()
def get_env(name: str) -> str:
    """An environment variable of this server process ('' when unset)."""
    return os.environ.get(name, "")


@server.tool()
def get_header(name: str, ctx: Context) -> str:
    """A header of the HTTP request carrying this call ('' when unset or not over HTTP)."""
    request = ctx.request_context.request
    return "" if request is None else str(request.headers.get(name, ""))


@server.tool()
async def hang() -> str:
    """Never returns."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def crash() -> str:
    """Kill this server process in the middle of the call."""
    os._exit(3)


if __name__ == "__main__":
    server.run("streamable-http" if sys.argv[1:2] == ["http"] else "stdio")
