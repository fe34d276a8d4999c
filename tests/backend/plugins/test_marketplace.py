"""The remote sources of one import share one time and bytes budget (`SharedBudget`)."""

from __future__ import annotations

import pytest

from backend.config import Settings
from backend.plugins import remote
from backend.plugins.marketplace import Allowance, RemoteSource, SharedBudget
from backend.plugins.tree import TreeFile
from backend.skills.importing.errors import FetchError
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import FetchedTree

SOURCE = RemoteSource(type="url", url="https://example.org/p.git")


class Counting:
    """A fetcher answering `size` bytes per fetch, counting its calls."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.calls = 0
        self.allowances: list[Allowance | None] = []

    async def fetch(
        self, source: RemoteSource, allowance: Allowance | None = None
    ) -> dict[str, TreeFile]:
        self.calls += 1
        self.allowances.append(allowance)
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
    # each fetch may use only what the earlier ones left: its own limits are narrowed to it
    assert [a.unpacked_bytes for a in inner.allowances if a is not None] == [10, 2]
    assert all(a is not None and 3590 < a.seconds <= 3600 for a in inner.allowances)


async def test_remote_sources_after_the_deadline_are_refused_fetch_timeout() -> None:
    inner = Counting(1)
    budget = SharedBudget(inner, seconds=0, max_bytes=10)

    with pytest.raises(FetchError) as refused:
        await budget.fetch(SOURCE)

    assert refused.value.code == "fetch_timeout" and inner.calls == 0


async def test_the_url_importer_narrows_its_limits_to_the_allowance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each remote source got the whole per-import limits, whatever the earlier ones had used
    seen: list[FetchLimits] = []

    async def fetch_source(*args: object) -> FetchedTree:
        limits = args[-1]
        assert isinstance(limits, FetchLimits)
        seen.append(limits)
        return FetchedTree("u", None, None, "", "git", "p", {}, {})

    monkeypatch.setattr(remote, "fetch_source", fetch_source)
    settings = Settings(import_max_unpacked_bytes=1000, import_timeout_seconds=60)
    fetcher = remote.SourceFetcher(lambda: settings)
    await fetcher.fetch(SOURCE)
    await fetcher.fetch(SOURCE, Allowance(unpacked_bytes=300, seconds=5))
    await fetcher.fetch(SOURCE, Allowance(unpacked_bytes=5000, seconds=500))
    assert [(x.unpacked_bytes, x.timeout_seconds) for x in seen] == [
        (1000, 60),
        (300, 5),
        (1000, 60),  # an allowance never raises a limit
    ]
