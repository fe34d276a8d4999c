"""Downloader: it blocks, so it runs in worker threads and refuses the event loop's."""

from __future__ import annotations

import asyncio

import pytest

from backend.skills.importing.errors import FetchError
from backend.skills.importing.http import Downloader
from backend.skills.importing.limits import FetchLimits
from chat_shell import EgressPolicy


async def test_a_downloader_refuses_to_block_the_event_loop_and_works_from_a_thread() -> None:
    with Downloader(EgressPolicy(), FetchLimits()) as downloader:
        with pytest.raises(RuntimeError, match="worker thread"):
            downloader.request("GET", "http://127.0.0.1/skills.zip")
        # From a worker thread it runs, and the egress policy refuses loopback by default.
        with pytest.raises(FetchError) as refused:
            await asyncio.to_thread(downloader.request, "GET", "http://127.0.0.1/skills.zip")
        assert refused.value.code == "egress_forbidden"
