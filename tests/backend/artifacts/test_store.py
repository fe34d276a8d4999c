"""The artifact rows: a kept workspace expires, everything goes with its conversation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, update

from backend.artifacts import store
from backend.chat import conversations
from backend.db.models import ConversationArtifact
from backend.db.types import utcnow
from backend.errors import NotFound
from tests.support.accounts import Account


async def conversation_of(app: FastAPI, account: Account) -> str:
    async with app.state.sessionmaker() as session:
        created = await conversations.create(session, account.id, "dev/x", "t")
        await session.commit()
        return created.id


async def test_a_kept_workspace_is_replaced_and_expires_after_its_ttl(
    app: FastAPI, alice: Account
) -> None:
    cid = await conversation_of(app, alice)
    async with app.state.sessionmaker() as session:
        await store.save_workspace(session, cid, b"first")
        await store.save_workspace(session, cid, b"second")
        await session.commit()
        assert await store.load_workspace(session, cid, ttl_seconds=60) == b"second"
        await session.execute(
            update(ConversationArtifact).values(created_at=utcnow() - timedelta(seconds=61))
        )
        assert await store.load_workspace(session, cid, ttl_seconds=60) is None
        await session.commit()
        left = await session.scalar(select(func.count()).select_from(ConversationArtifact))
    assert left == 0


async def test_a_workspace_is_neither_listed_nor_downloadable(app: FastAPI, alice: Account) -> None:
    cid = await conversation_of(app, alice)
    async with app.state.sessionmaker() as session:
        await store.save_workspace(session, cid, b"tar")
        await session.commit()
        rows = await session.scalars(select(ConversationArtifact.id))
        [workspace_id] = list(rows)
        assert await store.listing(session, cid, limit=10) == []
        with pytest.raises(NotFound) as refused:
            await store.get(session, cid, workspace_id)
    assert refused.value.code == "artifact_not_found"


async def test_deleting_the_conversation_deletes_its_files(app: FastAPI, alice: Account) -> None:
    cid = await conversation_of(app, alice)
    async with app.state.sessionmaker() as session:
        await store.add(session, cid, kind=store.OUTPUT, name="a", mime_type="x/y", data=b"1")
        await store.put_input(session, cid, "b", b"2", total_limit=10)
        await session.commit()
        await conversations.delete(session, alice.id, cid)
        await session.commit()
        left = await session.scalar(select(func.count()).select_from(ConversationArtifact))
    assert left == 0
