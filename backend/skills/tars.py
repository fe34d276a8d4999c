"""Compressed tars inflated whole and bounded, before `tarfile` reads them (skill imports,
artifacts installed as skills).

`tarfile` reads a pax or GNU long-name header whole, whatever size it declares, before it
yields a member: a small gzip could make it allocate gigabytes before any cap on entries or
sizes is checked. Inflating first, never past what the caps allow, bounds that; reading to the
stream's end verifies its checksum. Decompression errors (`OSError`, `EOFError`, `zlib.error`,
`lzma.LZMAError`) reach the caller, which answers them as an unreadable archive.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from collections.abc import Callable

# What a tar holds besides its files' bytes, per entry: its header block, the padding of its
# data to a block, and extended headers (a pax or GNU long name record).
ENTRY_OVERHEAD = 8 * 1024
_OPENERS: tuple[tuple[bytes, Callable[[io.BytesIO], io.BufferedIOBase]], ...] = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw)),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)


class TarTooLarge(Exception):
    """The tar inflates past `cap` bytes."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"the tar inflates to more than {cap} bytes")
        self.cap = cap


def inflated_tar(data: bytes, *, file_bytes: int, entries: int) -> bytes:
    """The tar in `data` (gzip, bzip2, xz or none), at most `file_bytes` of files in at most
    `entries` entries; `TarTooLarge` past that."""
    opener = next((o for magic, o in _OPENERS if data.startswith(magic)), None)
    if opener is None:
        return data
    cap = file_bytes + (entries + 2) * ENTRY_OVERHEAD  # two: the end-of-archive blocks
    with opener(io.BytesIO(data)) as stream:
        inflated = stream.read(cap + 1)
    if len(inflated) > cap:
        raise TarTooLarge(cap)
    return inflated
