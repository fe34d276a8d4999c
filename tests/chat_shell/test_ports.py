"""The in-memory implementations of chat_shell's ports."""

from __future__ import annotations

import asyncio

import pytest

from chat_shell.errors import ProviderLoadError
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource


async def test_wait_for_returns_once_the_awaited_event_is_emitted() -> None:
    channel = InMemoryFrontendChannel()
    waiter = asyncio.create_task(channel.wait_for("skill:request", count=2))
    await channel.emit("c1", "skill:request", {"n": 1})
    await channel.emit("c1", "other", {})
    assert not waiter.done()

    await channel.emit("c2", "skill:request", {"n": 2})

    async with asyncio.timeout(5):
        message = await waiter
    assert (message.conversation_id, message.data) == ("c2", {"n": 2})
    assert [m.event for m in channel.messages] == ["skill:request", "other", "skill:request"]


async def test_the_package_source_serves_by_hash_and_rejects_unknown_hashes() -> None:
    source = InMemoryPackageSource()
    digest = source.add(b"zip bytes")

    assert await source.get(digest) == b"zip bytes"
    with pytest.raises(ProviderLoadError) as raised:
        await source.get("0" * 64)
    assert raised.value.code == "provider_load_failed"
