"""Authorization that stays live on the open sockets and SSE streams of this gateway.

Each socket keeps the grant it connected with (token id, user id, expiry), and so does each open
SSE stream of a turn (`stream`). A socket is ended (an `auth:error {error}` event, then a
disconnect), a stream is told through its `StreamAccess` (it sends a last `error` event and
cancels its turn), when
- its token expires: a timer per socket or stream;
- a notice says its token was revoked or its user deactivated (`backend/auth/notices.py`): the
  gateway asks the database which of its sockets and streams are affected. With Redis, notices
  travel on a channel every gateway listens to; a gateway that was cut off from it checks them
  all when it subscribes again, since notices sent meanwhile are lost;
- an event finds it refused (sockets only): an event checks the database again when the socket's
  last check is older than `socket_auth_recheck_seconds`.
Until it is gone, every event of an ended socket is refused with the 401 code REST answers.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import Counter
from collections.abc import AsyncIterator, Collection, Coroutine, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import redis.asyncio as aioredis
import socketio
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.auth import service
from backend.auth.notices import AuthEnded, channel
from backend.config import Settings
from backend.db.models import ApiToken
from backend.db.types import utcnow
from backend.errors import SkillhiveError, Unauthorized
from backend.ws.rooms import NAMESPACE
from chat_shell import honour_cancellation

log = logging.getLogger("skillhive.ws")

ENDED_EVENT = "auth:error"
RESUBSCRIBE_S = 1.0  # after losing the notice channel

T = TypeVar("T")


class StreamAccess:
    """An open stream's hold on its grant (`LiveAuth.stream`): `refused` says why access ended,
    and a wait for the stream's next item in `until_refused` ends at once then."""

    def __init__(self) -> None:
        self.refused: Unauthorized | None = None
        self._waiting: asyncio.Timeout | None = None

    def end(self, refused: Unauthorized) -> None:
        if self.refused is not None:
            return
        self.refused = refused
        if self._waiting is not None:
            self._waiting.reschedule(-1)  # expires now: the wait raises TimeoutError

    async def until_refused(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        """`items` until they end or access does (see `refused`). A timeout per wait, not a
        task racing each item: an SSE stream passes one per token of its turn."""
        while self.refused is None:
            try:
                async with asyncio.timeout(None) as self._waiting:
                    item = await anext(items)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if self.refused is None:  # not ours
                    raise
                return
            finally:
                self._waiting = None
            yield item


@dataclass
class Grant:
    token_id: int
    user_id: int
    expires_at: datetime | None
    checked_at: float  # event loop time of the last database check
    refused: Unauthorized | None = None
    ending: bool = False
    timer: asyncio.TimerHandle | None = None
    stream: StreamAccess | None = None  # an SSE stream's (it ends itself); None for a socket


def _expired() -> Unauthorized:
    return Unauthorized("token expired", code="token_expired")


class LiveAuth:
    def __init__(self, server: socketio.AsyncServer, settings: Settings) -> None:
        self.server = server
        self.recheck_s = settings.socket_auth_recheck_seconds
        self.max_sockets = settings.socket_connections_per_user
        self._sockets: Counter[int] = Counter()  # open sockets by user id
        self._channel = channel(settings.redis_prefix)
        self._grants: dict[str, Grant] = {}  # by socket id, or `stream:<n>` for a stream
        self._stream_ids = itertools.count()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sessionmaker: async_sessionmaker[AsyncSession] | None = None
        self._redis: aioredis.Redis | None = None

    def start(
        self, sessionmaker: async_sessionmaker[AsyncSession], redis: aioredis.Redis | None
    ) -> None:
        self._sessionmaker = sessionmaker
        self._redis = redis
        if redis is not None:
            self._spawn(self._listen(redis))

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        assert self._sessionmaker is not None, "LiveAuth.start() runs in the app lifespan"
        return self._sessionmaker

    # --- SSE streams -----------------------------------------------------------------------

    @asynccontextmanager
    async def stream(self, token: ApiToken) -> AsyncIterator[StreamAccess]:
        """Watch the grant of a stream authenticated with `token` while the block runs: its
        revocation or expiry, or its user's deactivation, ends the `StreamAccess`."""
        key = f"stream:{next(self._stream_ids)}"  # never a Socket.IO sid (no colon in those)
        access = StreamAccess()
        loop = asyncio.get_running_loop()
        grant = Grant(token.id, token.user_id, token.expires_at, loop.time(), stream=access)
        self.admit(key, grant)
        try:
            yield access
        finally:
            self.forget(key)

    # --- sockets -------------------------------------------------------------------------

    async def authenticate(self, secret: str) -> Grant:
        """The grant of a connecting socket, or `Unauthorized` (as REST answers)."""
        async with self.sessionmaker() as session:
            user, token = await service.authenticate_token(session, secret)
        loop = asyncio.get_running_loop()
        return Grant(token.id, user.id, token.expires_at, checked_at=loop.time())

    def admit_socket(self, sid: str, grant: Grant) -> None:
        """A connecting socket holds its grant from now on, unless its user already holds
        `socket_connections_per_user` sockets on this gateway (429 `too_many_connections`):
        each socket costs memory, and sockets are what a user's event budget is shared by."""
        if self._sockets[grant.user_id] >= self.max_sockets:
            raise SkillhiveError(
                f"at most {self.max_sockets} open connections per user; close one first",
                code="too_many_connections",
                status_code=429,
                details={"limit": self.max_sockets},
            )
        self.admit(sid, grant)

    def admit(self, sid: str, grant: Grant) -> None:
        """The socket (or stream) holds this grant from now on (a socket's last connecting step)."""
        self.forget(sid)  # a grant replaced is one socket still
        self._grants[sid] = grant
        if grant.stream is None:
            self._sockets[grant.user_id] += 1
        if grant.expires_at is not None:
            delay = (grant.expires_at - utcnow()).total_seconds()
            loop = asyncio.get_running_loop()
            grant.timer = loop.call_later(max(delay, 0), self._refuse, sid, _expired())

    def forget(self, sid: str) -> None:
        grant = self._grants.pop(sid, None)
        if grant is None:
            return
        if grant.timer is not None:
            grant.timer.cancel()
        if grant.stream is None:
            self._sockets[grant.user_id] -= 1
            if not self._sockets[grant.user_id]:
                del self._sockets[grant.user_id]

    def rate_key(self, sid: str) -> Hashable:
        """Whose event budget an event of this socket spends: its user's, which every socket
        of theirs on this gateway shares (the socket's own before it is authenticated)."""
        grant = self._grants.get(sid)
        return ("user", grant.user_id) if grant is not None else ("socket", sid)

    def user_id(self, sid: str) -> int:
        grant = self._grants.get(sid)
        if grant is None:
            raise Unauthorized("the socket is not authenticated", code="invalid_token")
        return grant.user_id

    async def check(self, sid: str) -> Unauthorized | None:
        """Why an event of this socket is refused (see `end`), or None."""
        grant = self._grants.get(sid)
        if grant is None:
            return Unauthorized("the socket is not authenticated", code="invalid_token")
        if grant.refused is None and grant.expires_at is not None:
            if grant.expires_at <= utcnow():
                grant.refused = _expired()
        now = asyncio.get_running_loop().time()
        if grant.refused is None and now - grant.checked_at >= self.recheck_s:
            grant.checked_at = now
            async with self.sessionmaker() as session:
                refused = await service.refusals(session, [grant.token_id])
            grant.refused = grant.refused or refused.get(grant.token_id)
        return grant.refused

    async def end(self, sid: str) -> None:
        """Tell a refused socket why, then disconnect it (once)."""
        grant = self._grants.get(sid)
        if grant is None or grant.refused is None or grant.ending:
            return
        grant.ending = True
        if grant.timer is not None:
            grant.timer.cancel()
        error = grant.refused.to_dict()
        try:
            await self.server.emit(
                ENDED_EVENT, error, to=sid, namespace=NAMESPACE, ignore_queue=True
            )
        finally:
            await self.server.disconnect(sid, namespace=NAMESPACE, ignore_queue=True)
        log.info("ended socket %s of user %s: %s", sid, grant.user_id, error["error"]["code"])

    def _refuse(self, sid: str, refused: Unauthorized) -> None:
        grant = self._grants.get(sid)
        if grant is None:
            return
        grant.refused = grant.refused or refused
        if grant.stream is not None:
            grant.stream.end(grant.refused)
        else:
            self._spawn(self.end(sid))

    async def _recheck(self, sids: Collection[str]) -> None:
        """Ask the database about these sockets' tokens; end the refused ones."""
        grants = {sid: self._grants[sid] for sid in sids if sid in self._grants}
        if not grants:
            return
        async with self.sessionmaker() as session:
            refused = await service.refusals(session, {g.token_id for g in grants.values()})
        now = asyncio.get_running_loop().time()
        for sid, grant in grants.items():
            grant.checked_at = now
            if grant.token_id in refused:
                self._refuse(sid, refused[grant.token_id])

    # --- notices (backend.auth.notices.AuthNotices) --------------------------------------

    async def ended(self, notice: AuthEnded) -> None:
        try:
            if self._redis is None:  # embedded mode: this is the only gateway
                await self._apply(notice)
            else:
                await self._redis.publish(self._channel, notice.encode())
        except Exception as exc:  # the change is committed; events still see it (docstring)
            log.warning("could not hand over %s: %s", notice, exc)

    async def _apply(self, notice: AuthEnded) -> None:
        await self._recheck(
            [
                sid
                for sid, grant in self._grants.items()
                if grant.token_id == notice.token_id or grant.user_id == notice.user_id
            ]
        )

    async def _listen(self, redis: aioredis.Redis) -> None:
        while True:
            pubsub = redis.pubsub()
            try:
                await pubsub.subscribe(self._channel)
                async for message in pubsub.listen():
                    honour_cancellation()  # a cancel redis-py swallowed still ends the loop
                    if message["type"] == "subscribe":  # also after redis-py reconnected
                        await self._recheck(list(self._grants))
                    elif message["type"] == "message":
                        notice = AuthEnded.decode(message["data"])
                        if notice is not None:
                            await self._apply(notice)
            except Exception as exc:
                log.warning("auth notices: %s; subscribing again", exc)
                await asyncio.sleep(RESUBSCRIBE_S)
            finally:
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            honour_cancellation()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("live auth task failed", exc_info=task.exception())
