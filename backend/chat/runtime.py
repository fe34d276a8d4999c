"""The chat machinery of one gateway process, wired once at start-up.

Embedded mode: turns run in this process (InProcessDispatcher), events fan out in memory and to
the local Socket.IO server. Both REST and Socket.IO send through `ChatRuntime.send`.
"""

from __future__ import annotations

from typing import Any

import socketio
from cryptography.fernet import Fernet
from langchain_core.language_models import BaseChatModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.chat import conversations
from backend.chat.dispatch import InProcessDispatcher, TurnDispatcher
from backend.chat.events import InMemoryEventBus
from backend.chat.packages import DatabasePackageSource
from backend.chat.turns import TurnRunner
from backend.config import Settings
from backend.ws.rooms import SocketIOFrontendChannel, SocketIOSink

DEFAULT_TITLE = "New conversation"


class ChatRuntime:
    def __init__(
        self, settings: Settings, sio: socketio.AsyncServer, *, model: BaseChatModel | None = None
    ) -> None:
        self.settings = settings
        self.sio = sio
        self.model = model
        self.bus = InMemoryEventBus()
        self._sessionmaker: async_sessionmaker[AsyncSession] | None = None
        self._dispatcher: TurnDispatcher | None = None
        self.package_source: DatabasePackageSource | None = None

    def start(self, sessionmaker: async_sessionmaker[AsyncSession], cipher: Fernet) -> None:
        self._sessionmaker = sessionmaker
        self.package_source = DatabasePackageSource(
            sessionmaker, max_bytes=self.settings.package_cache_bytes
        )
        runner = TurnRunner(
            sessionmaker=sessionmaker,
            settings=self.settings,
            cipher=cipher,
            package_source=self.package_source,
            frontend=SocketIOFrontendChannel(self.sio),
            sinks=[self.bus, SocketIOSink(self.sio)],
            model=self.model,
        )
        self._dispatcher = InProcessDispatcher(runner)

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        assert self._sessionmaker is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._sessionmaker

    @property
    def dispatcher(self) -> TurnDispatcher:
        assert self._dispatcher is not None, "ChatRuntime.start() runs in the app lifespan"
        return self._dispatcher

    async def send(self, user_id: int, conversation_id: str, content: str) -> int:
        """Store the user's message and start the turn; 409 if one is running."""

        async def store() -> int:
            async with self.sessionmaker() as session:
                conversation = await conversations.get(session, user_id, conversation_id)
                if conversation.title == DEFAULT_TITLE:
                    conversation.title = " ".join(content.split())[: conversations.TITLE_CHARS]
                message = await conversations.add_user_message(session, conversation, content)
                await session.commit()
                return message.id

        return await self.dispatcher.submit(conversation_id, store)

    async def aclose(self) -> None:
        if self._dispatcher is not None:
            await self._dispatcher.aclose()

    def stats(self) -> dict[str, Any]:
        source = self.package_source
        return {"package_cache_bytes": source.cached_bytes if source else 0}
