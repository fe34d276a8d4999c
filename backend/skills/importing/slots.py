"""How many imports one process runs at once: a bound on the memory they hold.

An import keeps what it fetched and unpacked in memory (up to
`SKILLHIVE_IMPORT_MAX_UNPACKED_BYTES` each), so without a bound a tenant sending many at once
could exhaust the process. `SKILLHIVE_IMPORT_CONCURRENCY` imports run together; one more waits for
a slot up to `SKILLHIVE_IMPORT_TIMEOUT_SECONDS`, then is answered 503 `import_busy`. A user runs
one import at a time per process: a second is refused at once with 429 `import_in_progress`, so
one tenant's imports cannot take every slot while others wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from backend.errors import ServiceUnavailable, SkillhiveError


class ImportInProgress(SkillhiveError):
    status_code = 429
    code = "import_in_progress"


class ImportSlots:
    def __init__(self, size: int, *, retry_after_s: int) -> None:
        self._free = asyncio.Semaphore(size)
        self._users: set[int] = set()
        self._retry_after_s = retry_after_s

    @asynccontextmanager
    async def hold(self, user_id: int, *, wait_s: float) -> AsyncIterator[None]:
        """Run the block in a slot of this process, the user's only one here."""
        if user_id in self._users:
            raise ImportInProgress(
                "an import of yours is running; wait for it to end",
                details={"retry_after": self._retry_after_s},
            )
        self._users.add(user_id)
        try:
            try:
                await asyncio.wait_for(self._free.acquire(), wait_s)
            except TimeoutError:
                raise ServiceUnavailable(
                    f"every import slot stayed busy for {wait_s:g} s; retry later",
                    code="import_busy",
                    details={"retry_after": self._retry_after_s},
                ) from None
            try:
                yield
            finally:
                self._free.release()
        finally:
            self._users.discard(user_id)
