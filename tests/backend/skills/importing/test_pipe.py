"""BytePipe: exact and partial reads across a writer thread's chunks, its end, and failures."""

from __future__ import annotations

import threading

import pytest

from backend.skills.importing.pipe import BytePipe


def pipe(batch: int = 0, timeout: float = 5.0) -> BytePipe:
    return BytePipe(timeout, lambda: TimeoutError("no bytes came"), batch=batch)


def test_reads_take_exact_sizes_across_chunks_written_by_another_thread() -> None:
    data = bytes(range(256)) * 40
    chunks = [data[at : at + 37] for at in range(0, len(data), 37)]
    stream = pipe()

    def write() -> None:
        for chunk in chunks:
            stream.write(chunk)
        stream.close()

    writer = threading.Thread(target=write)
    writer.start()
    read = [stream.read(4), stream.read(1000), stream.read_some(10_000)]
    while piece := stream.read(333):
        read.append(piece)
    writer.join()
    assert b"".join(read) == data
    assert len(read[0]) == 4 and len(read[1]) == 1000 and 1 <= len(read[2]) <= 10_000
    assert stream.read(10) == b"" and stream.at_end()


def test_batched_writes_arrive_whole_and_the_rest_on_close() -> None:
    stream = pipe(batch=100)
    for _ in range(30):
        stream.write(b"0123456789")
    stream.close()
    assert stream.read_some(1000) == b"0123456789" * 10  # the first full batch
    assert stream.read(1000) == b"0123456789" * 20
    assert stream.written == 300


def test_a_writers_failure_is_raised_after_what_came_before_and_again() -> None:
    stream = pipe()
    stream.write(b"abc")
    stream.fail(ValueError("download failed"))
    assert stream.read(3) == b"abc"
    for _ in range(2):
        with pytest.raises(ValueError, match="download failed"):
            stream.read(1)


def test_a_reader_that_gives_up_stops_the_writer_and_a_silent_writer_times_out() -> None:
    stream = pipe(timeout=0.05)
    with pytest.raises(TimeoutError, match="no bytes came"):
        stream.read(1)
    stream.give_up(RuntimeError("parse refused"))
    with pytest.raises(RuntimeError, match="parse refused"):
        stream.write(b"more")
