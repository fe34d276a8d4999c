"""The generated `mcp_tools` module: the turn's MCP tools as functions calling the bridge.

Each call opens a connection to the bridge socket, sends one length-prefixed JSON request and
reads one answer (see _bridge.py for the protocol). Names in the source are checked identifiers;
every text from a server (descriptions, tool names) enters as a `repr` literal.
"""

from __future__ import annotations

from collections.abc import Sequence

from chat_shell.tools.mcp_code._functions import McpFunction

MODULE_NAME = "mcp_tools"

_CLIENT = '''\
"""The MCP tools of this conversation. Each function calls its tool and returns the result:
structured content when the tool gives some, else its text (parsed when it is JSON).
A failed call raises McpToolError (with .code). help(mcp_tools) lists them all."""

import json as _json
import socket as _socket
import struct as _struct

_SOCKET = {socket!r}
_MAX_ANSWER = {max_answer!r}
_UNSET = object()


class McpToolError(Exception):
    def __init__(self, code, message):
        super().__init__(f"[{{code}}] {{message}}")
        self.code = code
        self.message = message


def _receive(sock, size):
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 65536))
        if not chunk:
            raise McpToolError("mcp_bridge_closed", "the bridge closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def call_tool(name, arguments=None):
    """Call the MCP tool `name` (its name in TOOLS) with a dict of arguments."""
    body = _json.dumps({{"tool": name, "arguments": arguments or {{}}}}).encode()
    with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as sock:
        sock.connect(_SOCKET)
        sock.sendall(_struct.pack(">I", len(body)) + body)
        (size,) = _struct.unpack(">I", _receive(sock, 4))
        if size > _MAX_ANSWER:
            raise McpToolError("mcp_bridge_bad_frame", "answer too large")
        answer = _json.loads(_receive(sock, size))
    if not answer.get("ok"):
        error = answer.get("error") or {{}}
        raise McpToolError(error.get("code", "mcp_error"), error.get("message", ""))
    return answer.get("result")


def _call(_tool, /, **arguments):
    return call_tool(_tool, {{k: v for k, v in arguments.items() if v is not _UNSET}})


TOOLS = {{}}
'''


def render_module(functions: Sequence[McpFunction], *, socket: str, max_answer: int) -> str:
    parts = [_CLIENT.format(socket=socket, max_answer=max_answer)]
    for function in functions:
        parts.append(_function_source(function))
    return "\n".join(parts)


def _function_source(function: McpFunction) -> str:
    name, tool = function.function, function.name
    params = function.parameters()
    if params is None:
        signature, arguments = "**arguments", "**arguments"
    else:
        required = [p for p, needed in params if needed]
        optional = [p for p, needed in params if not needed]
        listed = [*required, *(f"{p}=_UNSET" for p in optional)]
        signature = f"*, {', '.join(listed)}" if listed else ""
        arguments = ", ".join(f"{p}={p}" for p, _ in params)
    call = f"_call({tool!r}, {arguments})" if arguments else f"_call({tool!r})"
    doc = f"{function.summary} (MCP server {function.server})"
    return (
        f"def {name}({signature}):\n"
        f"    return {call}\n\n\n"
        f"{name}.__doc__ = {doc!r}\n"
        f"TOOLS[{tool!r}] = {name}\n"
    )
