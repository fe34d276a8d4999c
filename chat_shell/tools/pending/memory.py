"""The embedded registry: one process, requests in dicts."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

from chat_shell.ports import FrontendChannel
from chat_shell.tools.pending.base import Answer, Outcome, _RegistryCore


@dataclass(frozen=True)
class _Tombstone:
    user_id: int
    outcome: Outcome  # what a late answer of the owner gets
    until: float


class InMemoryPendingRequestRegistry(_RegistryCore):
    """All answers arrive in this process; the event loop makes every claim atomic."""

    def __init__(self, channel: FrontendChannel, *, tombstone_ttl: float = 120.0) -> None:
        super().__init__(channel)
        self.worker_id = "embedded"
        self._tombstone_ttl = tombstone_ttl
        self._owners: dict[str, int] = {}
        # Same TTL for all, so insertion order is expiry order: pruning pops from the front.
        self._tombstones: OrderedDict[str, _Tombstone] = OrderedDict()

    async def start(self) -> None:
        """Nothing to start: the event loop is the whole machinery."""

    async def aclose(self) -> None:
        """Nothing to close; waits still pending end at their timeouts."""

    async def _register(self, request_id: str, user_id: int, timeout_s: float) -> None:
        self._owners[request_id] = user_id

    async def _claim(self, user_id: int, request_id: str, answer: Answer) -> Outcome:
        self._prune()
        owner = self._owners.get(request_id)
        if owner is not None:
            if owner != user_id:
                return Outcome.NOT_FOUND
            self._settle(request_id, Outcome.ALREADY_RESOLVED)
            self._deliver(request_id, answer)
            return Outcome.RESOLVED
        tombstone = self._tombstones.get(request_id)
        if tombstone is None or tombstone.user_id != user_id:
            return Outcome.NOT_FOUND
        return tombstone.outcome

    async def _expire(self, request_id: str) -> Answer | None:
        self._settle(request_id, Outcome.EXPIRED)
        return None

    def _abandon(self, request_id: str) -> None:
        self._settle(request_id, Outcome.EXPIRED)

    def _settle(self, request_id: str, late: Outcome) -> None:
        owner = self._owners.pop(request_id, None)
        if owner is not None:
            until = time.monotonic() + self._tombstone_ttl
            self._tombstones[request_id] = _Tombstone(owner, late, until)
        self._prune()

    def _prune(self) -> None:
        now = time.monotonic()
        while self._tombstones:
            request_id, oldest = next(iter(self._tombstones.items()))
            if oldest.until > now:
                return
            del self._tombstones[request_id]

    def stored(self) -> int:
        """Requests and tombstones held (for tests: nothing may pile up)."""
        self._prune()
        return len(self._owners) + len(self._tombstones)
