"""`execute_and_commit`: a transaction's last statement and its COMMIT (one trip on SQLite)."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, insert, select
from sqlalchemy.exc import IntegrityError

from backend.db.engine import create_engine
from backend.db.models import User
from backend.db.sqlite_driver import execute_and_commit

_ADD = insert(User).values(name=bindparam("name")).returning(User.id)


async def test_the_statement_and_everything_before_it_are_committed_together(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            await conn.execute(_ADD, {"name": "first"})
            rows = await execute_and_commit(conn, _ADD, {"name": "second"})
            assert not conn.in_transaction()
        async with engine.connect() as other:  # seen from another connection: committed
            found = await other.execute(select(User.id, User.name).where(User.name != "system"))
            names = {name: user_id for user_id, name in found}
        assert set(names) == {"first", "second"} and rows[0][0] == names["second"]
    finally:
        await engine.dispose()


async def test_a_failed_statement_commits_nothing_and_the_next_statement_is_not_committed(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            await conn.execute(_ADD, {"name": "kept-out"})
            with pytest.raises(IntegrityError):  # names are unique
                await execute_and_commit(conn, _ADD, {"name": "kept-out"})
            await conn.rollback()
            await conn.execute(_ADD, {"name": "uncommitted"})  # an ordinary statement again
            assert conn.in_transaction()
            await conn.rollback()
        async with engine.connect() as other:
            names = set((await other.scalars(select(User.name))).all())
        assert not names & {"kept-out", "uncommitted"}
    finally:
        await engine.dispose()
