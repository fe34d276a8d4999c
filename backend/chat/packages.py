"""The chat engine's `PackageSource`: skill ZIPs from `skill_blobs`, cached by content hash.

Content-addressed, so a cached entry can never be stale: a re-upload has a new hash. The engine
reads the bytes with the one package reader (`chat_shell.packages`) under `limits`, the caps
uploads were verified against, so it sees exactly the files the upload listed.
"""

from __future__ import annotations

from collections import OrderedDict

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.config import Settings
from backend.skills import service as skills
from backend.skills.limits import ArchiveLimits
from chat_shell import ProviderLoadError


class DatabasePackageSource:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        *,
        max_bytes: int,
        limits: ArchiveLimits | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._max_bytes = max_bytes
        self.limits = limits or ArchiveLimits()
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @classmethod
    def from_settings(
        cls, sessionmaker: async_sessionmaker[AsyncSession], settings: Settings
    ) -> DatabasePackageSource:
        return cls(
            sessionmaker,
            max_bytes=settings.package_cache_bytes,
            limits=ArchiveLimits.from_settings(settings),
        )

    async def get(self, sha256: str) -> bytes:
        cached = self._cache.get(sha256)
        if cached is not None:
            self._cache.move_to_end(sha256)
            self.hits += 1
            return cached
        self.misses += 1
        async with self._sessionmaker() as session:
            data = await skills.by_hash(session, sha256)
        if data is None:
            raise ProviderLoadError(f"no stored skill package with sha256 {sha256}")
        self._remember(sha256, data)
        return data

    def _remember(self, sha256: str, data: bytes) -> None:
        if len(data) > self._max_bytes:
            return  # larger than the whole cache: serve it, don't evict everything for it
        self._cache[sha256] = data
        self._bytes += len(data)
        while self._bytes > self._max_bytes:
            _, evicted = self._cache.popitem(last=False)
            self._bytes -= len(evicted)

    @property
    def cached_bytes(self) -> int:
        return self._bytes
