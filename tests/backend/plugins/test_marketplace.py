"""The remote sources of one import share one time and bytes budget (`SharedBudget`)."""

from __future__ import annotations

import pytest

from backend.plugins.marketplace import RemoteSource, SharedBudget
from backend.plugins.tree import TreeFile
from backend.skills.importing.errors import FetchError

SOURCE = RemoteSource(type="url", url="https://example.org/p.git")


class Counting:
    """A fetcher answering `size` bytes per fetch, counting its calls."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.calls = 0

    async def fetch(self, source: RemoteSource) -> dict[str, TreeFile]:
        self.calls += 1
        return {"a.md": TreeFile(b"x" * self.size, 0o644)}


async def test_remote_sources_past_the_bytes_budget_are_refused_without_fetching() -> None:
    inner = Counting(8)
    budget = SharedBudget(inner, seconds=3600, max_bytes=10)

    assert list(await budget.fetch(SOURCE)) == ["a.md"]
    for _ in range(2):
        with pytest.raises(FetchError) as refused:
            await budget.fetch(SOURCE)
        assert refused.value.code == "download_too_large"
        assert refused.value.status_code == 413
    assert inner.calls == 2  # the third is refused before any fetch


async def test_remote_sources_after_the_deadline_are_refused_fetch_timeout() -> None:
    inner = Counting(1)
    budget = SharedBudget(inner, seconds=0, max_bytes=10)

    with pytest.raises(FetchError) as refused:
        await budget.fetch(SOURCE)

    assert refused.value.code == "fetch_timeout" and inner.calls == 0
