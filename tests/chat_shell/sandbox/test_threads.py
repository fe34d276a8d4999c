"""`run_to_end`: workspace disk work in a thread that a cancelled caller waits for."""

from __future__ import annotations

import asyncio
import threading

import pytest

from chat_shell.sandbox import run_to_end


async def test_a_cancelled_caller_ends_only_after_its_thread_did() -> None:
    # else the caller went on to remove the workspace the thread still wrote into
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def unpack() -> str:
        started.set()
        release.wait(10)
        finished.append("unpacked")
        return "done"

    caller = asyncio.create_task(run_to_end(unpack))
    await asyncio.to_thread(started.wait, 10)
    for _ in range(3):  # a user's cancel, then the worker's shutdown, ...
        caller.cancel()
        await asyncio.sleep(0.05)
        assert not caller.done()  # still waiting for the thread, not yet cancelled
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert finished == ["unpacked"]
    assert await run_to_end(lambda: 7) == 7
