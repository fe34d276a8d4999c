"""Who sends an API request: one autocommit read on a pool of its own.

Turns, uploads and sends hold connections of the main pool for many round trips each; under load
they queue for it. Authentication is a single indexed read, and every request needs it, so it
does not queue behind them: its own small pool (SKILLHIVE_DATABASE_AUTH_POOL_SIZE), autocommit
(no BEGIN / ROLLBACK round trips), no pre-ping (a read on a connection the server closed is
retried once on a new one), and no write on the request's path. Revocation stays
immediate: every request still reads the token's row, nothing is cached.

The once-a-minute `last_used_at` write goes to the main pool in the background, at most one
pending per token (a burst of one token's requests writes the row once, not once each).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from backend.auth import service
from backend.db.models import User
from backend.db.types import utcnow

log = logging.getLogger("skillhive.auth")


class RequestAuth:
    def __init__(
        self,
        reads: async_sessionmaker[AsyncSession],
        writes: async_sessionmaker[AsyncSession],
    ) -> None:
        self.reads = reads  # the auth pool (autocommit)
        self._reads: AsyncEngine = reads.kw["bind"]
        self.writes = writes  # the main pool
        self._touching: dict[int, asyncio.Task[None]] = {}  # token id -> its pending write

    async def authenticate(self, secret: str) -> User:
        """The active user owning an unrevoked, unexpired token, or `Unauthorized`."""
        return (await self.identify(secret)).user

    async def identify(self, secret: str) -> service.Identity:
        """`authenticate`, with the token (an SSE stream watches it: `LiveAuth.stream`) and the
        user's quota overrides (a turn's send admits on them)."""
        try:
            identity = await self._read(secret)
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            # The server closed this pooled connection (restart, idle timeout): the pool has
            # dropped it and its elders, so the read goes again once, on a new connection.
            identity = await self._read(secret)
        token = identity.token
        now = utcnow()
        if service.touch_due(token, now) and token.id not in self._touching:
            task = asyncio.create_task(self._touch(token.id, now), name=f"touch:{token.id}")
            self._touching[token.id] = task
            task.add_done_callback(lambda _: self._touching.pop(token.id, None))
        return identity

    async def _read(self, secret: str) -> service.Identity:
        async with self._reads.connect() as connection:  # one read: a Session costs more
            return await service.identify(connection, secret)

    async def _touch(self, token_id: int, now: datetime) -> None:
        try:
            async with self.writes() as session:
                await service.touch(session, token_id, now)
                await session.commit()
        except Exception:  # "last used" is informative: a lost write costs nothing else
            log.warning("recording the use of token %s failed", token_id, exc_info=True)

    async def aclose(self) -> None:
        """Let pending writes finish (before the engines are disposed)."""
        await asyncio.gather(*self._touching.values(), return_exceptions=True)
