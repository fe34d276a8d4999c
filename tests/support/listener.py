"""A real TCP listener on loopback that counts the connections it accepts (egress tests).

Each connection gets one fixed HTTP response after its request head; `connections` tells
whether anything reached the listener at all.
"""

from __future__ import annotations

import asyncio
import ssl
from types import TracebackType
from typing import Self


def http_response(
    status: int = 200, body: str = "ok", headers: dict[str, str] | None = None
) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body.encode())}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


class Listener:
    def __init__(self, response: bytes | None = None, *, tls: ssl.SSLContext | None = None):
        self.response = response if response is not None else http_response()
        self.connections = 0
        self.heads: list[str] = []  # the request heads received
        self._tls = tls
        self._server: asyncio.Server | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        assert self._port is not None, "enter the listener first"
        return self._port

    def url(self, path: str = "/", *, host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            self.heads.append(head.decode("latin-1"))
            writer.write(self.response)
            await writer.drain()
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self._tls)
        self._port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
