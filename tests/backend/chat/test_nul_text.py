"""Text bound for the database holds no NUL: PostgreSQL text cannot, so neither database takes
one (the driver's error was a 500 there, and a stored NUL one on SQLite)."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from backend.db.models import Conversation, Message
from tests.support.chat import ChatSetup, send
from tests.support.errors import assert_error
from tests.support.openai_server import FakeOpenAIServer, Reply

CONVERSATIONS = "/api/v1/conversations"


async def _rows(app: FastAPI) -> tuple[int, int]:
    async with app.state.sessionmaker() as session:
        conversations = await session.scalar(select(func.count()).select_from(Conversation))
        messages = await session.scalar(select(func.count()).select_from(Message))
    return int(conversations or 0), int(messages or 0)


async def test_a_nul_in_a_title_message_ghost_or_id_is_a_422_and_nothing_is_stored(
    app: FastAPI, client: httpx.AsyncClient, chat: ChatSetup
) -> None:
    h = chat.account.headers
    cid = await chat.conversation(client)
    before = await _rows(app)
    ghost = (await client.get(f"{CONVERSATIONS}/{cid}", headers=h)).json()["ghost"]
    refused = [
        await client.post(CONVERSATIONS, json={"ghost": ghost, "title": "a\x00b"}, headers=h),
        await client.post(CONVERSATIONS, json={"ghost": ghost + "\x00"}, headers=h),
        await client.patch(f"{CONVERSATIONS}/{cid}", json={"title": "a\x00b"}, headers=h),
        await client.post(f"{CONVERSATIONS}/{cid}/messages", json={"content": "hi\x00"}, headers=h),
        await client.get(f"{CONVERSATIONS}/a%00b", headers=h),
        await client.get(f"{CONVERSATIONS}/a%00b/messages", headers=h),
        await client.post(f"{CONVERSATIONS}/a%00b/messages", json={"content": "hi"}, headers=h),
        await client.post(f"{CONVERSATIONS}/a%00b/cancel", headers=h),
        await client.delete(f"{CONVERSATIONS}/a%00b", headers=h),
        await client.get(f"{CONVERSATIONS}/{cid}/artifacts/a%00b", headers=h),
        await client.post(
            "/api/v1/namespaces/dev/skills/install",
            json={"conversation": cid, "artifact": "a\x00b"},
            headers=h,
        ),
    ]
    for response in refused:
        assert_error(response, 422, "invalid_request")
    assert await _rows(app) == before
    renamed = await client.get(f"{CONVERSATIONS}/{cid}", headers=h)
    assert "\x00" not in renamed.json()["title"]


async def test_an_answer_holding_nul_is_stored_with_it_replaced(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    # A model can be asked to print U+0000; PostgreSQL would refuse to store the answer.
    cid = await chat.conversation(client)
    openai_server.script(Reply(text="before\x00after"))
    answer = await send(client, chat, cid, "print a NUL")
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "ok"
    assert answer.json()["content"] == "before\ufffdafter"
    stored = await client.get(f"{CONVERSATIONS}/{cid}/messages", headers=chat.account.headers)
    assert stored.json()["items"][-1]["content"] == "before\ufffdafter"
