"""Reading git packs within the unpacked budget (`SKILLHIVE_IMPORT_MAX_UNPACKED_BYTES`).

A fetched pack is inflated once, as it is read (`FetchStore`), and every object is charged to
the budget from what the pack declares before zlib or a delta produces it. A dumb server's
loose objects and packs, which dulwich inflates whole, are charged as they arrive
(`check_dumb_object`).
"""

from __future__ import annotations

import re
import threading
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from io import BytesIO
from typing import cast

from dulwich.errors import ApplyDeltaError, ChecksumMismatch, FileFormatException
from dulwich.object_format import DEFAULT_OBJECT_FORMAT
from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Blob, ObjectID, RawObjectID, ShaFile, hex_to_sha
from dulwich.pack import DELTA_TYPES, OFS_DELTA, UnresolvedDeltas, apply_delta
from isal import isal_zlib

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.importing.pack_stream import (
    ENTRY_COST,
    TREE_COST,
    TREE_TYPE,
    Entry,
    read_pack,
)
from backend.skills.importing.pipe import BytePipe, PipeClosed

# What a corrupt or truncated pack raises while it is read: a failed fetch, never a 500.
BROKEN_PACK = (
    zlib.error,
    # ISA-L's own, not a zlib.error (its stub types it as an instance)
    cast("type[Exception]", isal_zlib.error),
    ChecksumMismatch,
    ApplyDeltaError,
    UnresolvedDeltas,
    FileFormatException,
)


PIPE_BATCH = 64 * 1024  # pack bytes handed to the parser at once (side-band packets are smaller)


class FetchStore(MemoryObjectStore):
    """A memory store that inflates a fetched pack once, as it is read.

    dulwich's own paths inflate every object twice (a pass to find where objects end, then
    one to resolve deltas) and hash the pack twice (its checksum, then each object), and
    copy every object into the store. Here one `read_pack` pass inflates each object
    (bounded by its declared size) and checks the pack's trailing checksum; deltas are applied
    to the bases kept from that pass, and each object's id is its own hash, as always. A fetch
    without `haves` gets no deltas against absent objects: any left unresolved fail the fetch.
    """

    def __init__(
        self,
        unpacked_budget: int,
        *,
        read_timeout: float = 65.0,
        timed_out: Callable[[], Exception] = lambda: PipeClosed("the pack stopped arriving"),
        on_blob: Callable[[ObjectID, bytes], object] | None = None,
    ) -> None:
        super().__init__()
        # Called by the parsing thread with each blob as it is resolved (its id checked).
        self._on_blob = on_blob
        self._budget = Budget(unpacked_budget, "the fetched pack's objects")
        # How long the parser waits for the pack's next bytes (the fetch's own reads are
        # bounded by its deadline: only a writer that hung would make it wait this long).
        self._read_timeout = read_timeout
        self._timed_out = timed_out
        self.failure: Exception | None = None

    def add_pack(self) -> tuple[BytePipe, Callable[[], None], Callable[[], None]]:  # type: ignore[override]
        """A pipe dulwich writes the fetched pack into, parsed as it arrives in a thread of
        its own, and dulwich's `commit` (the pack is complete: wait for the parse) and
        `abort` (the fetch failed: stop it). A parse that fails stops the writer at its next
        write; the failure is raised by `raise_failure`."""
        pipe = BytePipe(self._read_timeout, self._timed_out, batch=PIPE_BATCH)
        parser = threading.Thread(target=self._parse, args=(pipe,), daemon=True)
        parser.start()

        def commit() -> None:
            pipe.close()
            parser.join()

        def abort() -> None:
            pipe.fail(PipeClosed("the fetch failed"))
            parser.join()

        return pipe, commit, abort

    def _parse(self, pipe: BytePipe) -> None:
        try:
            if not pipe.at_end():  # else nothing was fetched (no wants)
                self.add_thin_pack(pipe.read, pipe.read_some)
        except Exception as exc:  # `abort` (the fetch's own error is raised), a timeout
            self.failure = self.failure or exc
        if self.failure is not None:
            pipe.give_up(self.failure)

    def add_thin_pack(
        self,
        read_all: Callable[[int], bytes],
        read_some: Callable[[int], bytes] | None,
        progress: Callable[[str], None] | None = None,
        *,
        max_input_size: int | None = None,  # the Downloader's byte budget bounds the pack
    ) -> None:
        hash_func = self.object_format.hash_func
        deltas = _Deltas(self._budget)
        try:
            for entry in read_pack(read_some or read_all, hash_func, self._budget):
                for obj in deltas.resolve(entry):
                    self._data[obj.id] = obj
                    if self._on_blob is not None and obj.type_num == Blob.type_num:
                        self._on_blob(obj.id, obj.as_raw_string())
            deltas.check_resolved()
        except (PackageError, *BROKEN_PACK) as exc:
            # Raised later by `raise_failure`: dulwich closes its spooled pack file only when
            # this returns.
            self.failure = exc

    def raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def __getitem__(self, name: ObjectID | RawObjectID) -> ShaFile:
        """The stored object itself, not dulwich's defensive copy (which serializes and
        parses it again): an import only reads the objects it fetched."""
        return self._data[self._to_hexsha(name)]


class Budget:
    """The bytes a fetched pack may inflate to: its objects' and resolved deltas' sizes, each
    charged from what the pack declares, before zlib or a delta produces them (a 64 MiB pack of
    zeros declares gigabytes)."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.used = 0

    def charge(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise PackageError(
                ErrorCode.UNCOMPRESSED_TOO_LARGE,
                f"{self.what} add up to more than {self.limit} bytes",
                limit=self.limit,
            )


def delta_target_size(delta: list[bytes]) -> int:
    """The result size a git delta declares (its second varint) without applying it."""
    data = b""
    for chunk in delta:  # two varints: at most 20 bytes
        data += chunk[: 20 - len(data)]
        if len(data) == 20:
            break
    index = 0
    sizes: list[int] = []
    while len(sizes) < 2:
        size = shift = 0
        while True:
            if index >= len(data):
                raise ApplyDeltaError("truncated delta header")
            byte = data[index]
            index += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        sizes.append(size)
    return sizes[1]


class _Deltas:
    """Objects of one pack in stream order, deltas applied once their base is known."""

    def __init__(self, budget: Budget) -> None:
        self._budget = budget
        self._by_offset: dict[int, tuple[int, list[bytes]]] = {}
        self._by_sha: dict[bytes, tuple[int, list[bytes]]] = {}
        self._waiting: dict[int | bytes, list[Entry]] = defaultdict(list)

    def resolve(self, entry: Entry) -> Iterator[ShaFile]:
        """The objects `entry` completes: itself, if its base is known, and the deltas
        waiting on it, transitively."""
        todo = [entry]
        while todo:
            current = todo.pop()
            resolved = self._apply(current)
            if resolved is None:
                continue
            type_num, chunks = resolved
            if len(chunks) > 1:  # joined once, here, as it arrives: not by every later read
                chunks = [b"".join(chunks)]
                resolved = type_num, chunks
            obj = ShaFile.from_raw_chunks(type_num, chunks)
            self._by_offset[current.offset] = resolved
            sha = hex_to_sha(obj.id)
            self._by_sha[sha] = resolved
            todo.extend(self._waiting.pop(current.offset, ()))
            todo.extend(self._waiting.pop(sha, ()))
            yield obj

    def _apply(self, entry: Entry) -> tuple[int, list[bytes]] | None:
        if entry.type_num not in DELTA_TYPES:
            return entry.type_num, entry.chunks
        assert entry.base is not None
        if entry.type_num == OFS_DELTA:
            assert isinstance(entry.base, int)
            base = self._by_offset.get(entry.base)
        else:
            assert isinstance(entry.base, bytes)
            base = self._by_sha.get(entry.base)
        if base is None:
            self._waiting[entry.base].append(entry)
            return None
        weight = TREE_COST if base[0] == TREE_TYPE else 1  # the result has its base's type
        self._budget.charge(weight * delta_target_size(entry.chunks))
        type_num, chunks = base[0], apply_delta(base[1], entry.chunks)
        # As dulwich's own resolver: only a blob may be empty (a too-short delta must not
        # make an empty commit or tree).
        if type_num != Blob.type_num and not any(chunks):
            raise ApplyDeltaError(f"delta resolved to an empty object of type {type_num}")
        return type_num, chunks

    def check_resolved(self) -> None:
        if self._waiting:
            raise UnresolvedDeltas([k for k in self._waiting if isinstance(k, bytes)])


LOOSE_OBJECT = re.compile(r"/objects/[0-9a-f]{2}/[0-9a-f]{38}$")


def inflate_counted(compressed: bytes, budget: Budget) -> None:
    """Inflate a zlib stream a chunk at a time, keeping nothing, charging what it makes."""
    budget.charge(ENTRY_COST)  # one object: its cost beside its bytes, as in a pack
    inflater = zlib.decompressobj()
    pending = compressed
    weight = 0  # known from the object's header, in its first inflated bytes
    while pending and not inflater.eof:
        made = inflater.decompress(pending, 1 << 20)
        if not weight and made:
            weight = TREE_COST if made.startswith(b"tree ") else 1
        budget.charge(weight * len(made))
        pending = inflater.unconsumed_tail


def check_dumb_object(url: str, body: bytes, budget: Budget) -> None:
    """Charge a dumb server's loose object or pack to the unpacked budget before dulwich,
    which inflates them whole (`zlib.decompress`, `PackData`), sees it."""
    if LOOSE_OBJECT.search(url):
        inflate_counted(body, budget)
    elif url.endswith(".pack"):
        entries = read_pack(BytesIO(body).read, DEFAULT_OBJECT_FORMAT.hash_func, budget)
        for entry in entries:  # one object in memory at a time
            if entry.type_num in DELTA_TYPES:
                budget.charge(delta_target_size(entry.chunks))
