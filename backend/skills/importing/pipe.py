"""`BytePipe`: bytes one thread writes and another reads as they come (a fetch's pack).

A git fetch's pack is parsed while it downloads: dulwich, reading the answer off the socket in
the import's worker thread, writes the pack it demultiplexes into a pipe the pack parser reads
(in a thread of its own). Either side can end the pipe with an error, which the other raises: a
failed download stops the parse, a refused pack stops the download.
"""

from __future__ import annotations

import queue
from collections.abc import Callable


class PipeClosed(Exception):
    """The reading side gave up (its own failure is reported where it happened)."""


class BytePipe:
    """A one-writer, one-reader byte stream between two threads.

    `read(n)` returns exactly `n` bytes (fewer only at the end), `read_some(n)` whatever has
    arrived (at least one byte unless at the end). A read waits at most `timeout` seconds for
    the writer; `on_timeout()` makes the exception raised then.
    """

    def __init__(
        self, timeout: float, on_timeout: Callable[[], Exception], *, batch: int = 0
    ) -> None:
        self._chunks: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()
        # Writes are handed over once `batch` bytes are pending: each hand-over wakes the
        # reader's thread, which must then take the GIL.
        self._batch = batch
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._timeout = timeout
        self._on_timeout = on_timeout
        self._buffer = b""
        self._at = 0  # bytes of `_buffer` already read
        self._ended = False
        self._failure: BaseException | None = None  # set by the writer, raised by the reader
        self._reader_gone: BaseException | None = None  # set by the reader, raised to the writer
        self.written = 0

    # The writing side.

    def write(self, data: bytes) -> int:
        if self._reader_gone is not None:
            raise self._reader_gone
        if data:
            self._pending.append(bytes(data))
            self._pending_size += len(data)
            self.written += len(data)
            if self._pending_size >= self._batch:
                self._hand_over()
        return len(data)

    def close(self) -> None:
        """No more bytes: reads return what is left, then b""."""
        self._hand_over()
        self._chunks.put(None)

    def fail(self, exc: BaseException) -> None:
        """The reader raises `exc` once it has read what came before."""
        self._hand_over()
        self._chunks.put(exc)

    def _hand_over(self) -> None:
        if self._pending:
            pending = self._pending
            self._chunks.put(pending[0] if len(pending) == 1 else b"".join(pending))
            self._pending, self._pending_size = [], 0

    # The reading side.

    def give_up(self, exc: BaseException) -> None:
        """The reader stops: the writer's next `write` raises `exc`."""
        self._reader_gone = exc

    def at_end(self) -> bool:
        """No byte is left (waits for the writer's next chunk or its end)."""
        return self._at == len(self._buffer) and not self._fill()

    def read(self, size: int) -> bytes:
        while len(self._buffer) - self._at < size and self._fill():
            pass
        return self._take(size)

    def read_some(self, size: int) -> bytes:
        if self._at == len(self._buffer):
            self._fill()
        return self._take(size)

    def _take(self, size: int) -> bytes:
        if self._at == 0 and size >= len(self._buffer):
            data, self._buffer = self._buffer, b""  # the whole chunk, not copied
        else:
            data = self._buffer[self._at : self._at + size]
            self._at += len(data)
            if self._at == len(self._buffer):
                self._buffer, self._at = b"", 0
        return data

    def _fill(self) -> bool:
        """One more chunk into the buffer; False at the end."""
        if self._failure is not None:
            raise self._failure
        if self._ended:
            return False
        try:
            chunk = self._chunks.get(timeout=self._timeout)
        except queue.Empty:
            raise self._on_timeout() from None
        if chunk is None:
            self._ended = True
            return False
        if isinstance(chunk, BaseException):
            self._failure = chunk
            raise chunk
        self._buffer = self._buffer[self._at :] + chunk if self._buffer else chunk
        self._at = 0
        return True
