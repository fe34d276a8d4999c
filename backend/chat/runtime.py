"""The chat machinery of one gateway process, built at start-up by the composition root
(`backend/chat/composition.py`).

Embedded mode (no Redis): turns run in this process through a `LocalTransport`. Scale-out mode
(`SKILLHIVE_REDIS_URL`): a `RedisTransport` submits turns to `skillhive worker` processes and
brings their envelopes back on one channel. The edges (SSE, Socket.IO rooms) listen to the
transport; REST and Socket.IO both send through `ChatRuntime.send`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from cryptography.fernet import Fernet
from langchain_core.language_models import BaseChatModel
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from backend.chat import conversations
from backend.chat.admission import Admission, LocalAdmission, RedisAdmission
from backend.chat.composition import TurnMachinery, build_gateway
from backend.chat.transport import LocalTransport, RedisTransport, TurnTransport
from backend.chat.transport.base import Listener
from backend.chat.turns import TurnRunner
from backend.config import Settings
from backend.ops.quotas import Quotas, counters_for
from backend.ops.tracing import tracer
from chat_shell import BubblewrapSandbox

# Conversations whose owner a gateway remembers (least recently used out): about 100 bytes each.
OWNERS_KEPT = 65_536


@dataclass(frozen=True)
class ReadOverrides:
    """The caller's quota overrides as just read with its token (`user_quotas.limits`, None
    without a row): a send given them reads nothing before admitting the turn when it knows the
    conversation is the caller's."""

    limits: dict[str, Any] | None


class ChatRuntime:
    def __init__(
        self,
        settings: Settings,
        *,
        model: BaseChatModel | None = None,
        sandbox: BubblewrapSandbox | None = None,
    ) -> None:
        self.settings = settings
        self.model = model
        self.sandbox = sandbox  # embedded turns run skill scripts here
        self._sessionmaker: async_sessionmaker[AsyncSession] | None = None
        self._machinery: TurnMachinery | None = None
        self._admission: Admission | None = None
        self.quotas = Quotas(settings, counters_for(None, settings.redis_prefix))
        self._owners: OrderedDict[str, int] = OrderedDict()  # conversation id -> its owner

    def owned_by(self, conversation_id: str, user_id: int) -> None:
        """Remember the conversation's owner (who created it, or whom a read showed). An owner
        never changes, so this cannot go stale; a deleted conversation's send still ends in 404,
        for the INSERT of its message checks the owner."""
        self._owners[conversation_id] = user_id
        self._owners.move_to_end(conversation_id)
        if len(self._owners) > OWNERS_KEPT:
            self._owners.popitem(last=False)

    async def start(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        cipher: Fernet,
        redis: aioredis.Redis | None,
        *,
        listeners: list[Listener] | None = None,
    ) -> None:
        """Build the machinery; `listeners` hear every envelope this gateway receives."""
        self._sessionmaker = sessionmaker
        # ops: quota counters shared through Redis
        self.quotas = Quotas(self.settings, counters_for(redis, self.settings.redis_prefix))
        self._machinery = build_gateway(
            self.settings,
            sessionmaker,
            cipher,
            redis,
            model=self.model,
            sandbox=self.sandbox,
            quotas=self.quotas,
        )
        transport = self._machinery.transport
        limit, retry_after = (
            self.settings.max_concurrent_turns_per_user,
            self.settings.retry_after_seconds,
        )
        if isinstance(transport, RedisTransport):
            assert redis is not None
            claims = transport.keys.lock("")
            self._admission = RedisAdmission(
                redis,
                limit,
                retry_after,
                claim_prefix=claims,
                key_prefix=f"{self.settings.redis_prefix}admission:",
            )
        else:
            assert isinstance(transport, LocalTransport)
            self._admission = LocalAdmission(limit, retry_after, transport.running)
        for listener in listeners or []:
            transport.listen(listener)
        await transport.start()

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        assert self._sessionmaker is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._sessionmaker

    @property
    def engine(self) -> AsyncEngine:
        """The main pool's engine (the sessionmaker's)."""
        engine: AsyncEngine = self.sessionmaker.kw["bind"]
        return engine

    @property
    def started(self) -> bool:
        return self._machinery is not None

    @property
    def transport(self) -> TurnTransport:
        assert self._machinery is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._machinery.transport

    @property
    def runner(self) -> TurnRunner | None:
        """The gateway's own runner (embedded mode); None when workers run the turns."""
        return self._machinery.runner if self._machinery is not None else None

    @property
    def admission(self) -> Admission:
        assert self._admission is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._admission

    async def send(
        self,
        user_id: int,
        conversation_id: str,
        content: str,
        *,
        owned: Callable[[], Awaitable[None]] | None = None,
        overrides: ReadOverrides | None = None,
    ) -> int:
        """Store the user's message and start the turn; 404 unless the conversation is the
        user's, then 409 if a turn runs in it, then 429 `too_many_turns` if the user has as
        many turns running as `SKILLHIVE_MAX_CONCURRENT_TURNS_PER_USER`. `owned` runs once the
        conversation is known to be the user's, before the turn can start (a socket joins the
        conversation's room there, so the ownership check is not read twice). `overrides`: the
        user's quota overrides, read with their token; with them, a conversation this gateway
        knows is theirs (`owned_by`) is admitted without a read."""
        # One connection reads and writes (prebuilt Core statements, no Session): a second
        # checkout cost a turn a pool round trip. Ownership before the claim: a 409 for someone
        # else's busy conversation would tell them it exists, and their claim would hold up its
        # owner's send. The check is a read, so no write lock is held while the send is
        # admitted (on SQLite one lock serializes every writer).
        async with self.engine.connect() as session:
            if overrides is not None and self._owners.get(conversation_id) == user_id:
                self._owners.move_to_end(conversation_id)
                own = overrides.limits
            else:
                own = await conversations.quota_overrides_if_owned(
                    session, user_id, conversation_id
                )
                self.owned_by(conversation_id, user_id)
            if owned is not None:
                await owned()
            limits = await self.quotas.admit_turn(user_id, own)  # 429 quota_* before writes

            async def store() -> int:  # runs with the conversation claimed
                # Nothing is written if refused; the user's own limit when an admin set one.
                await self.admission.admit(user_id, conversation_id, limits["concurrent_turns"])
                return await conversations.store_user_message(
                    session, user_id, conversation_id, content
                )

            with tracer.start_as_current_span("chat.send"):  # ops: the turn's trace starts here
                try:
                    return await self.transport.submit(conversation_id, user_id, store)
                except Exception:  # refused (409, 429) or failed: no turn started
                    await self.quotas.refund_turn(user_id, limits)
                    raise

    async def aclose(self) -> None:
        if self._machinery is not None:
            await self._machinery.transport.aclose()
