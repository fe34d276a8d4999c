"""A fetched pack inflated in one pass: deltas of either kind, in any order, and broken packs."""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable
from io import BytesIO

import pytest
from dulwich.errors import ChecksumMismatch, FileFormatException
from dulwich.object_format import DEFAULT_OBJECT_FORMAT
from dulwich.objects import Blob, Tree
from dulwich.pack import (
    OFS_DELTA,
    REF_DELTA,
    UnresolvedDeltas,
    create_delta,
    write_pack_header,
    write_pack_object,
)

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.importing.pack_stream import ENTRY_COST, TREE_COST
from backend.skills.importing.packs import BROKEN_PACK, PIPE_BATCH, FetchStore

# An entry is written at an offset; it gets the offsets written so far (by index).
Entry = Callable[[int, list[int]], tuple[int, object]]


def full(blob: Blob) -> Entry:
    return lambda _here, _offsets: (Blob.type_num, [blob.as_raw_string()])


def ofs_delta(base_index: int, base: Blob, target: Blob) -> Entry:
    delta = list(create_delta(base.as_raw_string(), target.as_raw_string()))
    return lambda here, offsets: (OFS_DELTA, (here - offsets[base_index], delta))


def ref_delta(base: Blob, target: Blob) -> Entry:
    delta = list(create_delta(base.as_raw_string(), target.as_raw_string()))
    return lambda _here, _offsets: (REF_DELTA, (bytes.fromhex(base.id.decode()), delta))


def build_pack(entries: list[Entry]) -> bytes:
    out = bytearray()
    digest = hashlib.sha1()

    def write(data: bytes) -> int:
        out.extend(data)
        digest.update(data)
        return len(data)

    write_pack_header(write, len(entries))
    offsets: list[int] = []
    for entry in entries:
        here = len(out)
        type_num, obj = entry(here, offsets)
        offsets.append(here)
        write_pack_object(write, type_num, obj, DEFAULT_OBJECT_FORMAT)  # type: ignore[arg-type]
    return bytes(out + digest.digest())


def blobs() -> list[Blob]:
    text = b"".join(b"line %d of a skill reference\n" % i for i in range(400))
    return [Blob.from_string(text + b"version %d\n" % n) for n in range(4)]


def stored(pack: bytes, budget: int = 1 << 30, chunk: int = 4096) -> dict[bytes, bytes]:
    """The pack's objects, written into the store `chunk` bytes at a time as dulwich's
    fetch does (`add_pack`: parsed by its own thread as the bytes arrive)."""
    store = FetchStore(budget, read_timeout=30)
    pipe, commit, abort = store.add_pack()
    try:
        for at in range(0, len(pack), chunk):
            pipe.write(pack[at : at + chunk])
    except BaseException:
        abort()
        raise
    commit()
    store.raise_failure()
    return {sha: store[sha].as_raw_string() for sha in store._data}


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_offset_and_ref_deltas_resolve_in_any_order_to_the_same_objects(chunk: int) -> None:
    a, b, c, d = blobs()
    pack = build_pack(
        [
            ref_delta(d, c),  # its base comes later in the pack
            full(a),
            ofs_delta(1, a, b),
            ref_delta(b, d),  # its base is itself a delta
        ]
    )
    assert stored(pack, chunk=chunk) == {blob.id: blob.as_raw_string() for blob in (a, b, c, d)}


def test_a_pack_read_whole_gives_the_same_objects_and_nothing_fetched_is_nothing() -> None:
    a, b, _, _ = blobs()
    pack = build_pack([full(a), ofs_delta(0, a, b)])
    store = FetchStore(1 << 30)
    store.add_thin_pack(BytesIO(pack).read, None)
    store.raise_failure()
    assert {sha: store[sha].as_raw_string() for sha in store._data} == stored(pack)
    assert stored(b"") == {}  # a fetch that wanted nothing writes no pack


def test_each_resolved_blob_is_handed_to_on_blob_once_with_its_checked_id() -> None:
    a, b, c, _ = blobs()
    pack = build_pack([full(a), ofs_delta(0, a, b), ref_delta(b, c)])
    seen: list[tuple[bytes, bytes]] = []
    store = FetchStore(1 << 30, on_blob=lambda sha, data: seen.append((sha, data)))
    pipe, commit, _ = store.add_pack()
    for at in range(0, len(pack), 1000):
        pipe.write(pack[at : at + 1000])
    commit()
    store.raise_failure()
    assert sorted(seen) == sorted((x.id, x.as_raw_string()) for x in (a, b, c))


def test_a_corrupt_truncated_or_unresolvable_pack_is_refused() -> None:
    a, b, c, _ = blobs()
    good = build_pack([full(a), ofs_delta(0, a, b)])
    flipped = bytearray(good)
    flipped[-3] ^= 1  # the trailing checksum
    with pytest.raises(ChecksumMismatch):
        stored(bytes(flipped))
    with pytest.raises(zlib.error):
        stored(good[: len(good) // 2])
    with pytest.raises(UnresolvedDeltas):
        stored(build_pack([full(a), ref_delta(c, b)]))  # c is not in the pack
    for at in (20, len(good) // 2):  # inside the first object's deflate data, the delta's
        garbled = bytearray(good)
        garbled[at : at + 8] = b"\xff" * 8
        with pytest.raises(BROKEN_PACK):
            stored(bytes(garbled))
    with pytest.raises(FileFormatException):
        stored(b"PACK" + (9).to_bytes(4, "big") + good[8:])  # no such pack version


def test_objects_are_charged_to_the_unpacked_budget_before_they_are_inflated() -> None:
    a, b, _, _ = blobs()
    pack = build_pack([full(a), ofs_delta(0, a, b)])
    exact = len(a.as_raw_string()) + len(b.as_raw_string()) + 2 * ENTRY_COST
    delta_size = len(b"".join(create_delta(a.as_raw_string(), b.as_raw_string())))
    # what the pack declares: each object's size and cost, and a delta's own size and result's
    assert len(stored(pack, budget=exact + delta_size)) == 2
    with pytest.raises(PackageError) as refused:
        stored(pack, budget=exact + delta_size - 1)
    assert refused.value.code == ErrorCode.UNCOMPRESSED_TOO_LARGE


def test_each_object_costs_its_holding_so_a_pack_of_empty_objects_is_bounded() -> None:
    # 5000 distinct one-byte blobs declare 5000 bytes: without a cost per object, a 64 MiB
    # pack of such would hold millions of parsed objects within a "256 MiB" budget
    many = [Blob.from_string(b"%d" % i) for i in range(5000)]
    pack = build_pack([full(blob) for blob in many])
    declared = sum(len(blob.as_raw_string()) for blob in many)
    assert len(pack) < 100 * 1024
    with pytest.raises(PackageError) as refused:
        stored(pack, budget=declared + 1000 * ENTRY_COST)
    assert refused.value.code == ErrorCode.UNCOMPRESSED_TOO_LARGE
    assert len(stored(pack, budget=declared + 5000 * ENTRY_COST)) == 5000


def test_a_tree_costs_what_its_parsed_rows_hold_not_its_bytes() -> None:
    # a tree is parsed into a Python entry per row: 10 MiB of rows held 67 MiB
    tree = Tree()
    for i in range(2000):
        tree.add(b"file-%05d" % i, 0o100644, Blob.from_string(b"%d" % i).id)
    raw = len(tree.as_raw_string())
    pack = build_pack([lambda _here, _offsets: (Tree.type_num, [tree.as_raw_string()])])
    with pytest.raises(PackageError) as refused:
        stored(pack, budget=ENTRY_COST + 4 * raw)
    assert refused.value.code == ErrorCode.UNCOMPRESSED_TOO_LARGE
    assert len(stored(pack, budget=ENTRY_COST + TREE_COST * raw)) == 1


def test_a_pack_of_zeros_that_declares_gigabytes_is_refused_unread() -> None:
    # A blob header declaring 4 GiB, then a zlib stream that would inflate to it: the budget
    # refuses it from the header, before zlib makes a byte (else this test would need 4 GiB).
    declared = 4 << 30
    header = bytearray([(Blob.type_num << 4) | 0x80 | (declared & 0x0F)])
    rest = declared >> 4
    while rest:
        header.append((rest & 0x7F) | (0x80 if rest >> 7 else 0))
        rest >>= 7
    squeeze = zlib.compressobj(9)
    body = squeeze.compress(bytes(1 << 20)) * 8 + squeeze.flush()  # only the start matters
    out = bytearray(b"PACK" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big"))
    out += header + body
    pack = bytes(out + hashlib.sha1(out).digest())
    with pytest.raises(PackageError) as refused:
        stored(pack, budget=64 << 20)
    assert refused.value.code == ErrorCode.UNCOMPRESSED_TOO_LARGE


def test_a_refused_pack_stops_its_writer_at_the_next_write() -> None:
    # The download feeding the parser ends as soon as the parser refuses what it read.
    store = FetchStore(100, read_timeout=30)
    pipe, _commit, abort = store.add_pack()
    a, _, _, _ = blobs()  # over the 100-byte budget
    pack = build_pack([full(a)])
    pipe.write(pack[:64])
    with pytest.raises(PackageError) as refused:
        for _ in range(1000):  # the parser needs a moment to read and refuse
            pipe.write(bytes(PIPE_BATCH))  # each write hands a batch over
            time.sleep(0.01)
    abort()
    assert refused.value.code == ErrorCode.UNCOMPRESSED_TOO_LARGE
    assert store.failure is refused.value


def test_a_pack_that_stops_arriving_fails_the_parse_with_the_stores_timeout() -> None:
    store = FetchStore(1 << 30, read_timeout=0.2, timed_out=lambda: TimeoutError("stalled"))
    pipe, commit, _abort = store.add_pack()
    a, _, _, _ = blobs()
    pipe.write(build_pack([full(a)])[:40])
    time.sleep(0.5)
    commit()
    with pytest.raises(TimeoutError, match="stalled"):
        store.raise_failure()
