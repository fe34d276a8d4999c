"""One chat turn over REST SSE, read in a thread so the terminal stays free for Ctrl-C."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

import httpx

from backend.client.api import TIMEOUT
from backend.client.config import ClientConfig
from backend.client.errors import ApiError, CliError, unreachable

Event = dict[str, Any]
TERMINAL = frozenset({"done", "error"})


def parse_sse(lines: Iterator[str]) -> Iterator[Event]:
    """The JSON `data:` of each server-sent event."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []
    if data:
        yield json.loads("\n".join(data))


class Turn:
    """Sends `content` and queues the turn's events; a failure to start or a broken stream
    arrives as a `CliError` in the queue, the last item."""

    def __init__(self, cfg: ClientConfig, conversation: str, content: str) -> None:
        self.events: queue.Queue[Event | CliError] = queue.Queue()
        self._cfg, self._conversation, self._content = cfg, conversation, content
        self._thread = threading.Thread(target=self._run, daemon=True)  # quits with the CLI
        self._thread.start()

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self._cfg.token}", "Accept": "text/event-stream"}
        path = f"/api/v1/conversations/{self._conversation}/messages"
        try:
            with (
                httpx.Client(base_url=self._cfg.url, headers=headers, timeout=TIMEOUT) as http,
                http.stream("POST", path, json={"content": self._content}) as response,
            ):
                if response.status_code >= 400:
                    response.read()
                    self.events.put(ApiError(response))
                    return
                for event in parse_sse(response.iter_lines()):
                    self.events.put(event)
                    if event.get("type") in TERMINAL:
                        return
            self.events.put(CliError("the event stream ended before the turn did"))
        except httpx.TransportError as exc:
            self.events.put(unreachable(self._cfg.url, exc))
        except ValueError as exc:  # a `data:` line that is not JSON
            self.events.put(CliError(f"unreadable event from the API: {exc}"))

    def next(self, timeout: float) -> Event | CliError | None:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None
