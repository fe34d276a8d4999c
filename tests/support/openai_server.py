"""A scripted OpenAI-compatible chat server on loopback, for exercising the real client path.

Stdlib only, self-contained (backend tests reuse it). Each POST to `/v1/chat/completions` takes
the next scripted `Reply`, records the request body, and answers as OpenAI does: SSE chunks when
`stream` is set (text deltas, tool-call deltas, a usage chunk when `stream_options.include_usage`),
a plain completion otherwise. A `gate` holds the stream after its first text delta until the
test releases it, which proves that tokens reach the caller while the answer is still coming.

    with FakeOpenAIServer() as server:
        server.script(Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "pdf"})]),
                      Reply(text="Done."))
        ChatOpenAI(base_url=server.base_url, api_key="k", model="m", streaming=True)
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GATE_TIMEOUT_S = 20.0


@dataclass
class ToolCall:
    name: str
    args: dict[str, Any]
    id: str = ""
    raw_arguments: str | None = None  # sent as the arguments instead of `args` (e.g. not JSON)

    @property
    def arguments(self) -> str:
        return json.dumps(self.args) if self.raw_arguments is None else self.raw_arguments


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 11
    completion_tokens: int = 7
    chunk_chars: int = 4  # text and tool arguments are streamed in pieces of this size
    status: int = 200  # anything else answers with an OpenAI-style error body
    gate: threading.Event | None = None
    gate_timed_out: bool = False  # set by the server: nobody opened the gate in time


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class FakeOpenAIServer:
    def __init__(self) -> None:
        self._replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def script(self, *replies: Reply) -> None:
        """Replace the script and forget recorded requests."""
        with self._lock:
            self._replies = list(replies)
            self.requests.clear()
            self.headers.clear()

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if not self._replies:
                return Reply(status=500, text="fake server: script exhausted")
            return self._replies.pop(0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def do_POST(self) -> None:
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._next(body, {k.lower(): v for k, v in self.headers.items()})
                if reply.status != 200:
                    error = {"error": {"message": reply.text, "type": "server_error"}}
                    self._send_json(reply.status, error)
                elif body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._send_json(200, _completion(body, reply))

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for i, chunk in enumerate(_stream_chunks(body, reply)):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if i == 1 and reply.gate is not None:  # right after the first text delta
                        reply.gate_timed_out = not reply.gate.wait(GATE_TIMEOUT_S)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def _tool_call_id(reply: Reply, index: int) -> str:
    return reply.tool_calls[index].id or f"call_{index}_{reply.tool_calls[index].name}"


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _tool_call_id(reply, i),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _usage(reply),
    }


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _stream_chunks(body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        chunks += [chunk({"content": p}) for p in _pieces(reply.text, reply.chunk_chars)]
    for i, call in enumerate(reply.tool_calls):
        head = {"index": i, "id": _tool_call_id(reply, i), "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        )
        chunks += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in _pieces(call.arguments, reply.chunk_chars)
        ]
    chunks.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**chunk({}), "choices": [], "usage": _usage(reply)})
    return chunks
