"""`read_pack`: the entries of a git pack as its bytes arrive, each charged to a budget first.

One pass over the stream: every entry's header is read and its declared size (plus what
holding an object costs, `ENTRY_COST`) charged before a byte of it is inflated; its zlib data
is inflated with ISA-L (about three times zlib's speed, the GIL released) and never past the
declared size; the pack's trailing checksum is checked over every byte before it. Deltas come
out as they are stored (`Entry.base`), for the caller to resolve. Broken input raises
`zlib.error` or ISA-L's `isal_zlib.error` (bad deflate data), `FileFormatException` or
`ChecksumMismatch`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol

from dulwich.errors import ChecksumMismatch, FileFormatException
from dulwich.pack import OFS_DELTA, REF_DELTA
from isal import isal_zlib

_CHUNK = 1 << 16
_TYPES = {1, 2, 3, 4, OFS_DELTA, REF_DELTA}  # commit, tree, blob, tag, and the two deltas
_MAX_VARINT = 10  # bytes of a size or offset varint: 70 bits, past any real pack
# What holding one more object costs beside its bytes (its parsed object and the resolver's
# entries: about 600 bytes measured), charged with each entry: a pack of empty objects
# declares nothing, yet 64 MiB of them, ~10 bytes each, would hold gigabytes.
ENTRY_COST = 1024
# A tree is parsed into one Python entry per row as it is stored (about 250 bytes for a row of
# about 35): charged this many times its size, so a compact pack of huge trees cannot hold
# several times the budget (6.7x measured).
TREE_COST = 8
TREE_TYPE = 2


class Charge(Protocol):
    def charge(self, size: int) -> None: ...


class Entry(NamedTuple):
    offset: int  # where the entry starts in the pack
    type_num: int
    base: int | bytes | None  # a delta's base: its offset (OFS_DELTA) or object id (REF_DELTA)
    chunks: list[bytes]  # the inflated data: the object, or the delta


def read_pack(
    read_some: Callable[[int], bytes], hash_func: Callable[[], Any], budget: Charge
) -> Iterator[Entry]:
    """The pack's entries in stream order; `read_some(n)` gives up to n bytes, b"" at the end."""
    return _PackStream(read_some, hash_func, budget).entries()


class _PackStream:
    def __init__(
        self, read_some: Callable[[int], bytes], hash_func: Callable[[], Any], budget: Charge
    ) -> None:
        self._read_some = read_some
        self._hash = hash_func()
        self._id_size = self._hash.digest_size
        self._budget = budget
        self._buffer = b""
        self._at = 0  # bytes of `_buffer` consumed (and not yet hashed)
        self._dropped = 0  # stream offset of `_buffer[0]`

    def entries(self) -> Iterator[Entry]:
        header = self._take(12)
        if header[:4] != b"PACK" or int.from_bytes(header[4:8], "big") not in (2, 3):
            raise FileFormatException("not a git pack (version 2 or 3)")
        for _ in range(int.from_bytes(header[8:12], "big")):
            yield self._entry()
        self._hash.update(self._buffer[: self._at])
        expected = self._hash.digest()
        self._buffer, self._at = self._buffer[self._at :], 0
        trailer = self._take(self._id_size)
        if trailer != expected:
            raise ChecksumMismatch(expected, trailer)

    def _entry(self) -> Entry:
        offset = self._dropped + self._at
        byte = self._byte()
        type_num, size, shift = (byte >> 4) & 0x07, byte & 0x0F, 4
        for _ in range(_MAX_VARINT):
            if not byte & 0x80:
                break
            byte = self._byte()
            size |= (byte & 0x7F) << shift
            shift += 7
        else:
            raise FileFormatException("an entry's size runs on")
        if type_num not in _TYPES:
            raise FileFormatException(f"unknown pack entry type {type_num}")
        weight = TREE_COST if type_num == TREE_TYPE else 1
        self._budget.charge(ENTRY_COST + weight * size)  # before zlib makes a byte of it
        base: int | bytes | None = None
        if type_num == OFS_DELTA:
            base = offset - self._back_offset()
        elif type_num == REF_DELTA:
            base = self._take(self._id_size)
        return Entry(offset, type_num, base, self._inflate(size))

    def _back_offset(self) -> int:
        """git's offset encoding: big-endian 7-bit groups, each continuation adding one."""
        byte = self._byte()
        value = byte & 0x7F
        for _ in range(_MAX_VARINT):
            if not byte & 0x80:
                return value
            byte = self._byte()
            value = ((value + 1) << 7) | (byte & 0x7F)
        raise FileFormatException("a delta's base offset runs on")

    def _inflate(self, size: int) -> list[bytes]:
        inflater = isal_zlib.decompressobj()
        chunks: list[bytes] = []
        made = 0
        while not inflater.eof:
            if self._at == len(self._buffer):
                self._fill()
            # One byte past the declared size is enough to know the entry lies.
            piece = inflater.decompress(memoryview(self._buffer)[self._at :], size - made + 1)
            made += len(piece)
            if made > size:
                raise zlib.error("an entry inflates past its declared size")
            if piece:
                chunks.append(piece)
            rest = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
            self._at = len(self._buffer) - len(rest)
        if made != size:
            raise zlib.error("an entry inflates short of its declared size")
        return chunks

    def _byte(self) -> int:
        if self._at == len(self._buffer):
            self._fill()
        self._at += 1
        return self._buffer[self._at - 1]

    def _take(self, size: int) -> bytes:
        while len(self._buffer) - self._at < size:
            self._fill()
        self._at += size
        return self._buffer[self._at - size : self._at]

    def _fill(self) -> None:
        """Hash what was consumed, keep the rest, append the next bytes of the stream."""
        chunk = self._read_some(_CHUNK)
        if not chunk:
            raise zlib.error("the pack ends early")
        self._hash.update(memoryview(self._buffer)[: self._at])
        self._dropped += self._at
        self._buffer = self._buffer[self._at :] + chunk if self._at < len(self._buffer) else chunk
        self._at = 0
