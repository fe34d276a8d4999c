"""A turn queued before its user was deactivated does not run with that user's secrets."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import update

from backend.chat import conversations
from backend.db.models import User
from tests.support.chat import ChatSetup
from tests.support.openai_server import FakeOpenAIServer, Reply


async def test_a_queued_turn_of_a_deactivated_user_fails_without_calling_the_model(
    app: FastAPI, client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await chat.conversation(client)
    async with app.state.sessionmaker() as session:
        message_id = await conversations.add_user_message(session, chat.account.id, cid, "queued")
        await session.execute(
            update(User).where(User.id == chat.account.id).values(is_active=False)
        )
        await session.commit()
    openai_server.script(Reply(text="must not be produced"))

    reply = await app.state.chat.runner.run(cid, message_id)  # e.g. a worker's
    assert reply is not None and reply.status == "error"
    assert reply.error == {"code": "user_inactive", "message": "user is deactivated"}
    assert openai_server.requests == []  # the model, called with the user's key, never was
