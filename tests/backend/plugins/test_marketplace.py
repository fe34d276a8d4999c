"""The remote sources of one import share one time, download and unpacked-bytes budget
(`SharedBudget`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from backend.config import Settings
from backend.plugins import remote
from backend.plugins.marketplace import Allowance, RemoteSource, SharedBudget
from backend.plugins.tree import TreeFile
from backend.skills.importing.errors import FetchError, FetchFailed
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import FetchedTree

SOURCE = RemoteSource(type="url", url="https://example.org/p.git")


class Counting:
    """A fetcher answering `size` bytes per fetch after downloading `downloads` bytes (failing
    with `fail` then, when given), counting its calls."""

    def __init__(self, size: int, downloads: int = 0, fail: Exception | None = None) -> None:
        self.size = size
        self.downloads = downloads
        self.fail = fail
        self.calls = 0
        self.allowances: list[Allowance | None] = []

    async def fetch(
        self, source: RemoteSource, allowance: Allowance | None = None
    ) -> dict[str, TreeFile]:
        self.calls += 1
        self.allowances.append(allowance)
        if allowance is not None:
            allowance.note_downloaded(self.downloads)
        if self.fail is not None:
            raise self.fail
        return {"a.md": TreeFile(b"x" * self.size, 0o644)}


def budget_of(
    inner: Counting, *, max_bytes: int = 10**6, max_download: int = 10**6
) -> SharedBudget:
    return SharedBudget(inner, seconds=3600, max_bytes=max_bytes, max_download_bytes=max_download)


async def test_remote_sources_past_the_bytes_budget_are_refused_without_fetching() -> None:
    inner = Counting(8)
    budget = budget_of(inner, max_bytes=10)

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
    budget = SharedBudget(inner, seconds=0, max_bytes=10, max_download_bytes=10)

    with pytest.raises(FetchError) as refused:
        await budget.fetch(SOURCE)

    assert refused.value.code == "fetch_timeout" and inner.calls == 0


async def test_remote_sources_share_one_download_budget_failed_fetches_included() -> None:
    # each source could download the whole per-import limit: a marketplace of many sources
    # that download their fill and then fail cost that many times the limit
    failing = Counting(0, downloads=60, fail=FetchFailed("not an archive"))
    budget = budget_of(failing, max_download=100)

    for _ in range(2):
        with pytest.raises(FetchFailed):
            await budget.fetch(SOURCE)
    with pytest.raises(FetchError) as refused:
        await budget.fetch(SOURCE)

    assert refused.value.code == "download_too_large" and refused.value.status_code == 413
    assert failing.calls == 2  # the third is refused before it downloads anything
    assert [a.download_bytes for a in failing.allowances if a is not None] == [100, 40]


async def test_a_fetcher_downloading_past_its_allowance_fails_the_budget() -> None:
    budget = budget_of(Counting(1, downloads=150), max_download=100)

    with pytest.raises(FetchError) as refused:
        await budget.fetch(SOURCE)

    assert refused.value.code == "download_too_large"


async def test_the_url_importer_narrows_its_limits_to_the_allowance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each remote source got the whole per-import limits, whatever the earlier ones had used
    seen: list[FetchLimits] = []

    async def fetch_source(
        *args: object, received: Callable[[int], None] | None = None
    ) -> FetchedTree:
        limits = args[-1]
        assert isinstance(limits, FetchLimits)
        seen.append(limits)
        if received is not None:
            received(7)  # what the fetch downloaded
        return FetchedTree("u", None, None, "", "git", "p", {}, {})

    monkeypatch.setattr(remote, "fetch_source", fetch_source)
    settings = Settings(
        import_max_unpacked_bytes=1000, import_max_download_bytes=500, import_timeout_seconds=60
    )
    fetcher = remote.SourceFetcher(lambda: settings)
    narrow = Allowance(unpacked_bytes=300, download_bytes=200, seconds=5)
    wide = Allowance(unpacked_bytes=5000, download_bytes=5000, seconds=500)
    await fetcher.fetch(SOURCE)
    await fetcher.fetch(SOURCE, narrow)
    await fetcher.fetch(SOURCE, wide)
    assert [(x.unpacked_bytes, x.download_bytes, x.timeout_seconds) for x in seen] == [
        (1000, 500, 60),
        (300, 200, 5),
        (1000, 500, 60),  # an allowance never raises a limit
    ]
    assert narrow.downloaded == wide.downloaded == 7  # told back to the shared budget
