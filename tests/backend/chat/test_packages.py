"""The chat engine's package source: bytes from `skill_blobs` by hash, LRU bounded by bytes."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from backend.chat.packages import DatabasePackageSource
from chat_shell.errors import ProviderLoadError
from tests.backend.api.skill_helpers import upload
from tests.conftest import Account
from tests.support import zips


async def test_packages_are_served_by_hash_and_evicted_least_recently_used_first(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    hashes = {}
    for name in ("one", "two", "three"):
        data = zips.skill(name, files={"pad.bin": bytes(range(256)) * 8})
        crd = (await upload(client, alice.headers, data)).json()
        hashes[name] = (crd["status"]["sha256"], data)
    size = max(len(d) for _, d in hashes.values())
    source = DatabasePackageSource(app.state.sessionmaker, max_bytes=2 * size + 10)

    for name in ("one", "two"):
        assert await source.get(hashes[name][0]) == hashes[name][1]
    assert (source.hits, source.misses) == (0, 2)
    await source.get(hashes["one"][0])  # "one" becomes the most recently used
    assert source.hits == 1
    await source.get(hashes["three"][0])  # evicts "two", the least recently used
    assert source.cached_bytes <= 2 * size + 10
    await source.get(hashes["one"][0])
    assert source.hits == 2
    await source.get(hashes["two"][0])
    assert source.misses == 4  # "two" had to come from the database again

    with pytest.raises(ProviderLoadError):
        await source.get("0" * 64)
