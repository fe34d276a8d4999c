"""The send's write: the touch and the message in one trip, only in a conversation of the
user's (the touch is held back unchecked; the INSERT checks)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from backend.auth import service as auth_service
from backend.chat import conversations
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.models import Conversation, Message
from backend.errors import NotFound
from tests.support.conversations import owned_conversation


async def test_a_message_goes_only_into_a_conversation_of_the_user(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with create_sessionmaker(engine)() as session:
            owner = await auth_service.create_user(session, "owner")
            other = await auth_service.create_user(session, "other")
            conversation = await conversations.create(
                session, owner.id, "default/helper", conversations.DEFAULT_TITLE
            )
            await session.commit()
            cid, owner_id, other_id = conversation.id, owner.id, other.id
            before = conversation.updated_at

        async with engine.connect() as conn:
            with pytest.raises(NotFound):
                await conversations.store_user_message(conn, other_id, cid, "not yours")
            assert not conn.in_transaction()  # nothing left open on the connection
            message_id = await conversations.store_user_message(conn, owner_id, cid, "  plan  it ")

        async with create_sessionmaker(engine)() as session:
            stored = (
                await session.scalars(select(Message).where(Message.conversation_id == cid))
            ).all()
            touched = await session.get(Conversation, cid)
        assert [(m.id, m.role, m.content, m.status) for m in stored] == [
            (message_id, "user", "  plan  it ", "ok")
        ]
        assert stored[0].tool_calls == [] and stored[0].usage == {}  # the columns' defaults
        assert touched is not None and touched.title == "plan it"  # named by the owner's send
        assert touched.updated_at >= before
    finally:
        await engine.dispose()


async def test_a_message_for_a_deleted_conversation_is_not_found(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        owner_id, cid = await owned_conversation(engine)
        async with create_sessionmaker(engine)() as session:
            await conversations.delete(session, owner_id, cid)
            await session.commit()
        async with engine.connect() as conn:
            with pytest.raises(NotFound):
                await conversations.store_user_message(conn, owner_id, cid, "too late")
        async with engine.connect() as conn:
            left = (await conn.execute(select(Message.id))).all()
        assert left == []
    finally:
        await engine.dispose()
