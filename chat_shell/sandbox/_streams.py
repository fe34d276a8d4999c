"""Reading a sandbox's pipes with a byte cap, so no amount of output can fill the host."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK = 64 * 1024


@dataclass
class Captured:
    data: bytes
    overflowed: bool


async def read_capped(
    reader: asyncio.StreamReader, cap: int, on_overflow: Callable[[], None]
) -> Captured:
    """Keep the first `cap` bytes; past them call `on_overflow` once and discard the rest
    (reading on, so the writer is never blocked on a full pipe before it is killed)."""
    kept = bytearray()
    overflowed = False
    while chunk := await reader.read(CHUNK):
        if overflowed:
            continue
        room = cap - len(kept)
        kept += chunk[:room]
        if len(chunk) > room:
            overflowed = True
            on_overflow()
    return Captured(bytes(kept), overflowed)


async def copy_capped(
    reader: asyncio.StreamReader, dest: Path, cap: int, on_overflow: Callable[[], None]
) -> bool:
    """Copy the stream into the new file `dest`, up to `cap` bytes; False if there was more.

    Past the cap it calls `on_overflow` (which closes the pipe, so the writer gets EPIPE).
    """
    total = 0
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    handle: BinaryIO
    with os.fdopen(fd, "wb") as handle:
        while chunk := await reader.read(CHUNK):
            total += len(chunk)
            if total > cap:
                on_overflow()
                return False
            handle.write(chunk)
    return True


async def pipe_reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    """An asyncio reader over the read end of an `os.pipe()`; closing the transport closes it."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    return reader, transport
