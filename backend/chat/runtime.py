"""The chat machinery of one gateway process, wired once at start-up.

Embedded mode (no Redis): turns run in this process, events fan out in memory and to the local
Socket.IO server, browser requests wait in memory. Scale-out mode (`SKILLHIVE_REDIS_URL`): turns
go to `skillhive worker` processes through a Redis Stream, events come back over Redis pub/sub
(SSE) and through Socket.IO's Redis manager (rooms on every gateway), and `skill:response`
answers reach the waiting worker through the Redis registry. REST and Socket.IO both send
through `ChatRuntime.send`.
"""

from __future__ import annotations

import redis.asyncio as aioredis
import socketio
from cryptography.fernet import Fernet
from langchain_core.language_models import BaseChatModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.chat import conversations
from backend.chat.admission import Admission, LocalAdmission, RedisAdmission
from backend.chat.dispatch import InProcessDispatcher, TurnDispatcher
from backend.chat.events import EventBus, InMemoryEventBus
from backend.chat.packages import DatabasePackageSource
from backend.chat.redis_bus import RedisEventBus
from backend.chat.sandbox import sandbox_access
from backend.chat.stream import RedisStreamDispatcher, lock_key
from backend.chat.turns import TurnRunner
from backend.config import Settings
from backend.ops.quotas import Quotas, counters_for
from backend.ops.tracing import tracer
from backend.ws.rooms import SocketIOFrontendChannel, SocketIOSink
from chat_shell.sandbox import BubblewrapSandbox
from chat_shell.tools.pending_requests import (
    InMemoryPendingRequestRegistry,
    PendingRequestRegistry,
    RedisPendingRequestRegistry,
)

DEFAULT_TITLE = "New conversation"


class ChatRuntime:
    def __init__(
        self,
        settings: Settings,
        sio: socketio.AsyncServer,
        *,
        model: BaseChatModel | None = None,
        sandbox: BubblewrapSandbox | None = None,
    ) -> None:
        self.settings = settings
        self.sio = sio
        self.model = model
        self.sandbox = sandbox  # embedded turns run skill scripts here
        self._sessionmaker: async_sessionmaker[AsyncSession] | None = None
        self._bus: EventBus | None = None
        self._dispatcher: TurnDispatcher | None = None
        self._registry: PendingRequestRegistry | None = None
        self._admission: Admission | None = None
        self.quotas = Quotas(settings, counters_for(None))

    def start(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        cipher: Fernet,
        redis: aioredis.Redis | None,
    ) -> None:
        self._sessionmaker = sessionmaker
        self.quotas = Quotas(self.settings, counters_for(redis))  # ops: shared through Redis
        frontend = SocketIOFrontendChannel(self.sio)
        if redis is not None:
            self._bus = RedisEventBus(redis)
            self._dispatcher = RedisStreamDispatcher(redis)
            self._registry = RedisPendingRequestRegistry(redis, frontend)  # resolve() only here
            self._admission = RedisAdmission(
                redis,
                self.settings.max_concurrent_turns_per_user,
                self.settings.retry_after_seconds,
                claim_prefix=lock_key(""),
            )
            return
        bus = InMemoryEventBus()
        self._registry = InMemoryPendingRequestRegistry(frontend)
        runner = TurnRunner(
            sessionmaker=sessionmaker,
            settings=self.settings,
            cipher=cipher,
            package_source=DatabasePackageSource.from_settings(sessionmaker, self.settings),
            frontend=frontend,
            sinks=[bus, SocketIOSink(self.sio)],
            pending_requests=self._registry,
            model=self.model,
            sandbox=sandbox_access(self.sandbox, self.settings) if self.sandbox else None,
            slots=self.settings.embedded_turn_concurrency,
            quotas=self.quotas,
        )
        self._bus = bus
        dispatcher = InProcessDispatcher(runner)
        self._dispatcher = dispatcher
        self._admission = LocalAdmission(
            self.settings.max_concurrent_turns_per_user,
            self.settings.retry_after_seconds,
            dispatcher.running,
        )

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        assert self._sessionmaker is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._sessionmaker

    @property
    def bus(self) -> EventBus:
        assert self._bus is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._bus

    @property
    def dispatcher(self) -> TurnDispatcher:
        assert self._dispatcher is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._dispatcher

    @property
    def registry(self) -> PendingRequestRegistry:
        assert self._registry is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._registry

    @property
    def admission(self) -> Admission:
        assert self._admission is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._admission

    async def send(self, user_id: int, conversation_id: str, content: str) -> int:
        """Store the user's message and start the turn; 404 unless the conversation is the
        user's, then 409 if a turn runs in it, then 429 `too_many_turns` if the user has as
        many turns running as `SKILLHIVE_MAX_CONCURRENT_TURNS_PER_USER`."""
        # Ownership before the claim: a 409 for someone else's busy conversation would tell
        # them it exists.
        async with self.sessionmaker() as session:
            await conversations.get(session, user_id, conversation_id)
            await self.quotas.admit_turn(session, user_id)  # ops: 429 quota_* before any write

        async def store() -> int:  # runs with the conversation claimed
            await self.admission.admit(user_id, conversation_id)  # nothing written if refused
            async with self.sessionmaker() as session:
                conversation = await conversations.get(session, user_id, conversation_id)
                if conversation.title == DEFAULT_TITLE:
                    conversation.title = " ".join(content.split())[: conversations.TITLE_CHARS]
                message = await conversations.add_user_message(session, conversation, content)
                await session.commit()
                return message.id

        with tracer.start_as_current_span("chat.send"):  # ops: the turn's trace starts here
            return await self.dispatcher.submit(conversation_id, store)

    async def aclose(self) -> None:
        if self._dispatcher is not None:
            await self._dispatcher.aclose()
