"""`HotRead`: a prebuilt SELECT run on the driver gives what SQLAlchemy's execution gives, on
both databases: the same values and types, the transaction's own writes, SQLAlchemy's errors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Numeric, bindparam, cast, column, insert, select, table
from sqlalchemy.exc import DBAPIError

from backend.auth import service as auth
from backend.chat import conversations
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.hot_reads import HotRead, driver_rows
from backend.db.models import ApiToken, Message, User, UserQuota
from backend.db.sqlite_driver import defer


async def test_rows_match_sqlalchemys_values_and_types(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with create_sessionmaker(engine)() as session:
            user = await auth.create_user(session, "ann")
            secret = (await auth.issue_token(session, user, "t")).secret
            session.add(UserQuota(user_id=user.id, limits={"turns_per_minute": 3}))
            chat = await conversations.create(session, user.id, "dev/g", "hello")
            first = await conversations.add_user_message(session, user.id, chat.id, "hi")
            await session.commit()
        statement = (
            select(
                Message.id,
                Message.content,
                Message.tool_calls,  # JSON
                Message.created_at,  # a UTC datetime (TypeDecorator)
                User.is_active,  # a boolean (an integer on SQLite)
                UserQuota.limits,
                Message.reply_to,  # NULL
            )
            .select_from(Message)
            .join(User, User.id == bindparam("uid"))
            .outerjoin(UserQuota, UserQuota.user_id == User.id)
            .where(Message.conversation_id == bindparam("cid"), Message.role == "user")
        )
        params = {"uid": user.id, "cid": chat.id}
        async with engine.connect() as conn:
            expected = [tuple(r) for r in (await conn.execute(statement, params)).all()]
            found = await HotRead(statement).rows(conn, params)
        assert [tuple(r) for r in found] == expected and len(found) == 1
        row = found[0]
        assert row.id == first and row.content == "hi" and row.tool_calls == []
        assert row.is_active is True and row.limits == {"turns_per_minute": 3}
        assert row.reply_to is None
        assert isinstance(row.created_at, datetime) and row.created_at.tzinfo is not None
        assert abs(row.created_at - datetime.now(UTC)).total_seconds() < 600

        async with engine.connect() as conn:  # the hot reads the service uses
            user_found, token, overrides = await auth.identify(conn, secret)
        assert user_found.id == user.id and user_found.name == "ann"
        assert isinstance(token, ApiToken) and token.user_id == user.id
        assert overrides == {"turns_per_minute": 3}  # the user's quota row, with the token
    finally:
        await engine.dispose()


async def test_a_read_sees_its_transactions_writes_held_back_ones_included(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    names = HotRead(select(User.name).where(User.name.like(bindparam("like"))).order_by(User.name))
    try:
        async with engine.connect() as conn:
            await conn.execute(insert(User).values(name="written"))
            await defer(conn, insert(User).values(name="wz-held"))  # sent before the read
            found = [r.name for r in await names.rows(conn, {"like": "w%"})]
            await conn.rollback()
        assert found == ["written", "wz-held"]
        async with engine.connect() as other:  # rolled back: nothing was committed by the read
            assert await names.rows(other, {"like": "w%"}) == []
    finally:
        await engine.dispose()


async def test_a_driver_error_is_sqlalchemys_and_the_connection_stays_usable(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    missing = table("no_such_table", column("x"))
    broken = HotRead(select(missing.c.x).where(missing.c.x == bindparam("x")))
    try:
        async with engine.connect() as conn:
            with pytest.raises(DBAPIError) as refused:
                await broken.rows(conn, {"x": 1})
            assert not refused.value.connection_invalidated
            await conn.rollback()
            await conn.execute(insert(User).values(name="after"))
            ok = HotRead(select(User.name).where(User.name == bindparam("name")))
            assert [r.name for r in await ok.rows(conn, {"name": "after"})] == ["after"]
            await conn.rollback()
    finally:
        await engine.dispose()


def test_statements_it_cannot_run_as_given_are_refused_at_first_use() -> None:
    engine = create_engine("sqlite+aiosqlite:///:memory:")
    try:
        expanding = HotRead(select(User.id).where(User.id.in_(bindparam("ids", expanding=True))))
        with pytest.raises(TypeError):  # completed at execution time (an IN list)
            expanding._compile(engine.dialect)
        dated = HotRead(
            select(User.id).where(User.created_at < bindparam("at", type_=User.created_at.type))
        )
        with pytest.raises(TypeError):  # its parameter needs the type's processing
            dated._compile(engine.dialect)
        numeric = HotRead(select(cast(User.id, Numeric(10, 2))))
        with pytest.raises(TypeError):  # its processor needs the column type the driver reports
            numeric._compile(engine.dialect)
    finally:
        engine.sync_engine.dispose()


async def test_driver_sql_rows_are_exec_driver_sqls(database_url: str) -> None:
    engine = create_engine(database_url)
    style = ":name" if engine.dialect.name == "sqlite" else "%(name)s"
    sql = f"SELECT id, name, is_active FROM users WHERE name = {style} ORDER BY id"
    try:
        async with engine.connect() as conn:
            await conn.execute(insert(User).values(name="dee"))
            expected = [tuple(r) for r in (await conn.exec_driver_sql(sql, {"name": "dee"})).all()]
            found = await driver_rows(conn, sql, {"name": "dee"})
            await conn.rollback()
        assert [tuple(r) for r in found] == expected and len(found) == 1
    finally:
        await engine.dispose()


@pytest.mark.parametrize("db_backend", ["postgresql"], indirect=True)
async def test_a_read_on_a_closed_connection_replaces_every_older_one(database_url: str) -> None:
    # As the auth pool is made: no pre-ping, so a read meets a connection the server closed.
    engine = create_engine(database_url, pool_size=3, overflow=0, pre_ping=False, autocommit=True)
    read = HotRead(select(User.id).where(User.name == bindparam("name")))
    try:
        opened = [await engine.connect() for _ in range(3)]  # three pooled connections
        for conn in opened:
            assert await read.rows(conn, {"name": "nobody"}) == []
        for conn in opened:
            await conn.close()
        admin = create_engine(database_url)
        async with admin.connect() as other:  # the server closes every one of them
            await other.exec_driver_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        await admin.dispose()
        with pytest.raises(DBAPIError) as refused:
            async with engine.connect() as conn:
                await read.rows(conn, {"name": "nobody"})
        assert refused.value.connection_invalidated
        async with engine.connect() as conn:  # a new connection: the older ones went too
            assert await read.rows(conn, {"name": "nobody"}) == []
    finally:
        await engine.dispose()


@pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)
async def test_a_read_on_a_closed_sqlite_connection_is_sqlalchemys_error(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            raw = await conn.get_raw_connection()
            await raw.driver_connection.close()  # aiosqlite raises ValueError on it then
            with pytest.raises(DBAPIError):
                await driver_rows(conn, "SELECT 1", {})
            await conn.invalidate()
    finally:
        await engine.dispose()
