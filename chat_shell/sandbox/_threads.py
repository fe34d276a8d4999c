"""Disk work on a workspace, off the event loop and never outliving its caller.

`asyncio.to_thread` cannot stop its thread: a caller cancelled mid-unpack would go on to
remove the workspace while the thread still writes into it, leaving files behind. Here a
cancelled caller first waits for the thread to end (the work is bounded by the workspace's
caps), then is cancelled, however many times it is cancelled meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


async def run_to_end(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)` in a worker thread; a cancellation waits for it to finish."""
    task = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():  # a second cancel (a user's, then shutdown's) waits on too
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        raise
