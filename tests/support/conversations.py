"""A conversation in the database, written as the service writes one (no HTTP, no app)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from backend.auth import service as auth_service
from backend.chat import conversations
from backend.db.engine import create_sessionmaker


async def owned_conversation(engine: AsyncEngine, title: str = "t") -> tuple[int, str]:
    """(user id, conversation id): a new user `owner` and a conversation of theirs, committed."""
    async with create_sessionmaker(engine)() as session:
        owner = await auth_service.create_user(session, "owner")
        conversation = await conversations.create(session, owner.id, "default/helper", title)
        await session.commit()
        return owner.id, conversation.id
