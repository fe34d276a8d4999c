"""`HotWrite`: a prebuilt INSERT or UPDATE run on the driver stores what SQLAlchemy's execution
stores, on both databases: column defaults, type processing (JSON, UTC datetimes), RETURNING,
the transaction's commit and rollback, held-back statements, SQLAlchemy's errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from backend.db.engine import create_engine
from backend.db.hot_writes import HotWrite
from backend.db.models import Conversation, Message, User

_ADD_USER = HotWrite(insert(User).values(name=bindparam("name")).returning(User.id))
_RENAME = HotWrite(update(User).where(User.name == bindparam("old")).values(name=bindparam("new")))


async def _names(engine: AsyncEngine) -> set[str]:
    """The users another connection sees: what was committed."""
    async with engine.connect() as other:
        found = await other.scalars(select(User.name).where(User.name != "system"))
        return set(found.all())


_ADD_CHAT = HotWrite(
    insert(Conversation).values(
        id=bindparam("id"), user_id=bindparam("uid"), ghost="dev/g", title=bindparam("title")
    )
)


async def test_defaults_and_type_processing_are_sqlalchemys(engine: AsyncEngine) -> None:
    at = datetime(2026, 5, 1, 12, 30, tzinfo=UTC)
    add = HotWrite(
        insert(Message)
        .values(
            conversation_id=bindparam("cid"),
            role="assistant",
            content=bindparam("content"),
            usage=bindparam("usage"),
            created_at=bindparam("at"),
        )
        .returning(Message.id)
    )
    async with engine.connect() as conn:
        user_id = (await _ADD_USER.rows(conn, {"name": "ann"}))[0][0]
        await _ADD_CHAT.rows(conn, {"id": "c-1", "uid": user_id, "title": "t"})
        params = {"cid": "c-1", "content": "hi", "usage": {"prompt_tokens": 3}, "at": at}
        message_id = (await add.rows(conn, params, commit=True))[0][0]
    async with engine.connect() as other:
        stored = (await other.execute(select(Message).where(Message.id == message_id))).one()
        chat = (await other.execute(select(Conversation))).one()
    # given values through their types, the others from the columns' defaults
    assert stored.usage == {"prompt_tokens": 3} and stored.created_at == at
    assert stored.status == "ok" and stored.tool_calls == [] and stored.loaded_skills == []
    assert stored.role == "assistant" and stored.reply_to is None
    assert abs(chat.created_at - datetime.now(UTC)) < timedelta(minutes=10)
    assert chat.updated_at == chat.created_at or chat.updated_at > chat.created_at


async def test_an_update_takes_its_columns_onupdate_and_a_value_given_wins(
    engine: AsyncEngine,
) -> None:
    then = datetime(2026, 1, 1, tzinfo=UTC)
    rename = HotWrite(
        update(Conversation).where(Conversation.id == bindparam("id")).values(title="renamed")
    )
    async with engine.connect() as conn:
        user_id = (await _ADD_USER.rows(conn, {"name": "ann"}))[0][0]
        await _ADD_CHAT.rows(conn, {"id": "c-1", "uid": user_id, "title": "t"})
        await _ADD_CHAT.rows(conn, {"id": "c-2", "uid": user_id, "title": "t"})
        await conn.execute(update(Conversation).values(updated_at=then))
        await rename.rows(conn, {"id": "c-1"})
        await rename.rows(conn, {"id": "c-2", "updated_at": then}, commit=True)
        rows = (await conn.execute(select(Conversation).order_by(Conversation.id))).all()
    assert [r.title for r in rows] == ["renamed", "renamed"]
    assert rows[0].updated_at > then  # the column's onupdate
    assert rows[1].updated_at == then  # given: the default does not apply


async def test_commit_ends_the_whole_transaction_and_rollback_undoes_it(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as conn:
        await conn.execute(insert(User).values(name="first"))  # SQLAlchemy's own statement
        await _ADD_USER.rows(conn, {"name": "second"}, commit=True)
        assert not conn.in_transaction()
        await _ADD_USER.rows(conn, {"name": "undone"})
        assert conn.in_transaction()
        await conn.rollback()
    assert await _names(engine) == {"first", "second"}


async def test_a_held_back_write_goes_with_the_next_statement_or_not_at_all(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as conn:
        await _ADD_USER.rows(conn, {"name": "a"}, commit=True)
        await _RENAME.defer(conn, {"old": "a", "new": "b"})
        await _ADD_USER.rows(conn, {"name": "c"}, commit=True)
    assert await _names(engine) == {"b", "c"}
    async with engine.connect() as conn:
        await _RENAME.defer(conn, {"old": "b", "new": "never"})
        await conn.rollback()  # dropped with the transaction (on SQLite never sent)
        await _RENAME.defer(conn, [{"old": "c", "new": "d"}, {"old": "d", "new": "e"}])
        await conn.commit()  # a COMMIT alone sends what was held back
    assert await _names(engine) == {"b", "e"}


async def test_a_failed_write_is_sqlalchemys_error_and_commits_nothing(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as conn:
        await _ADD_USER.rows(conn, {"name": "taken"}, commit=True)
        await _ADD_USER.rows(conn, {"name": "kept-out"})
        with pytest.raises(IntegrityError):  # names are unique
            await _ADD_USER.rows(conn, {"name": "taken"}, commit=True)
        await conn.rollback()
        await _RENAME.defer(conn, {"old": "taken", "new": "taken-2"})
        await _ADD_USER.rows(conn, {"name": "other"})
        with pytest.raises(IntegrityError):  # a held-back write's error: raised by the next trip
            await _RENAME.defer(conn, {"old": "other", "new": "taken-2"})
            await conn.commit()
        await conn.rollback()
        assert await _ADD_USER.rows(conn, {"name": "after"}, commit=True)  # still usable
    assert await _names(engine) == {"taken", "after"}


def test_statements_it_cannot_prepare_are_refused_at_first_use() -> None:
    engine = create_engine("sqlite+aiosqlite:///:memory:")
    try:
        expanding = HotWrite(
            update(User).where(User.id.in_(bindparam("ids", expanding=True))).values(name="x")
        )
        with pytest.raises(TypeError):  # completed at execution time (an IN list)
            expanding._compile(engine.dialect)
    finally:
        engine.sync_engine.dispose()
