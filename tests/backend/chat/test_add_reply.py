"""The turn's answer write: stored once, and handed back as the row it stored."""

from __future__ import annotations

from sqlalchemy import inspect, select

from backend.chat import conversations
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.models import Message
from tests.support.conversations import owned_conversation


async def test_the_answer_comes_back_detached_as_if_loaded(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        owner_id, cid = await owned_conversation(engine)
        async with engine.connect() as conn:
            asked = await conversations.store_user_message(conn, owner_id, cid, "hi")
            answer = await conversations.add_reply(
                conn,
                cid,
                asked,
                content="hello\x00",
                status="ok",
                tool_calls=[{"id": "c1", "name": "load_skill"}],
                loaded_skills=None,
                usage={"prompt_tokens": 3},
            )
            assert not conn.in_transaction()  # committed in the write's trip
        async with create_sessionmaker(engine)() as session:
            row = (await session.scalars(select(Message).where(Message.reply_to == asked))).one()
            stored = {c.key: getattr(row, c.key) for c in Message.__table__.c}
            key = inspect(row).key

        state = inspect(answer)
        assert state.detached and not state.modified and state.key == key
        assert {name: getattr(answer, name) for name in stored} == stored
        assert answer.content == "hello\ufffd" and answer.reply_to == asked
        async with create_sessionmaker(engine)() as session:  # joins a session as loaded
            merged = await session.merge(answer, load=False)
            assert merged.status == "ok" and not session.dirty and not session.new
    finally:
        await engine.dispose()
