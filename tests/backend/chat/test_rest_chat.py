"""Chat over REST (JSON and SSE) with the real ChatOpenAI client against a scripted server."""

from __future__ import annotations

from typing import Any

import httpx

from backend.app import create_app
from backend.chat.transport import TurnEnded
from backend.config import Settings
from tests.support.accounts import Account
from tests.support.chat import (
    PDF_PROMPT,
    ChatSetup,
    held_turn,
    load,
    make_setup,
    parse_sse,
    send,
    system_prompt,
)
from tests.support.errors import assert_error
from tests.support.lifespan import running
from tests.support.openai_server import FakeOpenAIServer, Reply


async def test_skill_loaded_in_turn_one_is_still_there_in_turn_two(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await chat.conversation(client)
    openai_server.script(load("pdf-tools"), Reply(text="Loaded, the form has 3 pages."))
    first = await send(client, chat, cid, "Fill this PDF form")
    assert first.status_code == 200, first.text
    answer = first.json()
    assert answer["role"] == "assistant" and answer["status"] == "ok"
    assert answer["content"] == "Loaded, the form has 3 pages."
    assert [s["name"] for s in answer["loaded_skills"]] == ["pdf-tools"]
    assert [c["name"] for c in answer["tool_calls"]] == ["load_skill"]
    assert answer["usage"]["prompt_tokens"] > 0
    # lazy: the instructions were absent from the first call and present from the next one
    first_call, second_call = openai_server.requests
    assert PDF_PROMPT not in system_prompt(first_call)
    assert "pdf-tools" in system_prompt(first_call)  # the catalog
    assert PDF_PROMPT in system_prompt(second_call)
    assert openai_server.headers[0]["authorization"] == "Bearer sk-test-key"

    openai_server.script(Reply(text="Still on it."))
    second = await send(client, chat, cid, "And the second page?")
    assert second.json()["content"] == "Still on it."
    assert PDF_PROMPT in system_prompt(openai_server.requests[0])

    listed = await client.get(f"/api/v1/conversations/{cid}/messages", headers=chat.account.headers)
    roles = [(m["role"], m["content"][:5]) for m in listed.json()["items"]]
    assert roles == [
        ("user", "Fill "),
        ("assistant", "Loade"),
        ("user", "And t"),
        ("assistant", "Still"),
    ]


async def test_a_skill_drops_out_after_the_retention_window(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    chat = await make_setup(client, alice, openai_server, retentionTurns=1)
    cid = await chat.conversation(client)
    openai_server.script(load("pdf-tools"), Reply(text="ok"))
    await send(client, chat, cid, "pdf please")
    openai_server.script(Reply(text="ok"))
    await send(client, chat, cid, "next")  # one turn after the last use: still loaded
    assert PDF_PROMPT in system_prompt(openai_server.requests[0])
    openai_server.script(Reply(text="ok"))
    third = await send(client, chat, cid, "something else")
    assert PDF_PROMPT not in system_prompt(openai_server.requests[0])
    assert third.json()["loaded_skills"] == []


async def test_a_gateway_restart_between_turns_keeps_loaded_skills(
    settings: Settings, client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await chat.conversation(client)
    openai_server.script(load("pdf-tools"), Reply(text="ok"))
    await send(client, chat, cid, "pdf please")

    restarted = create_app(settings)  # a new process in all but name: nothing shared in memory
    async with running(restarted):
        transport = httpx.ASGITransport(app=restarted)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as other:
            openai_server.script(Reply(text="still here"))
            reply = await send(other, chat, cid, "continue")
    assert reply.json()["content"] == "still here"
    assert PDF_PROMPT in system_prompt(openai_server.requests[0])


async def test_sse_streams_the_turn_events(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await chat.conversation(client)
    openai_server.script(load("pdf-tools"), Reply(text="Streaming answer here."))
    async with client.stream(
        "POST",
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "pdf"},
        headers={**chat.account.headers, "Accept": "text/event-stream"},
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        body = (await response.aread()).decode()
        turn = int(response.headers["x-message-id"])
    events = parse_sse(body)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert {(data["conversation_id"], data["message_id"]) for _, data in events} == {(cid, turn)}
    assert {"tool_start", "tool_end", "skill_loaded", "token", "usage"} <= set(kinds)
    assert kinds.index("skill_loaded") < kinds.index("token")
    text = "".join(data["delta"] for kind, data in events if kind == "token")
    assert text == "Streaming answer here."
    assert len([k for k in kinds if k == "token"]) > 1  # really streamed in pieces
    done = events[-1][1]
    assert done["message"]["content"] == "Streaming answer here."
    assert done["message"]["id"] > 0
    assert set(done) == {"type", "message", "conversation_id", "message_id"}  # the answer once


async def test_offline_model_answers_without_any_server(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = {
        "apiVersion": "skillhive.io/v1",
        "kind": "Ghost",
        "metadata": {"name": "offline"},
        "spec": {
            "systemPrompt": "Be brief.",
            "skills": ["skillhive-skill-authoring"],
            "model": {"name": "offline"},
        },
    }
    assert (
        await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=alice.headers)
    ).status_code == 201
    created = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/offline"}, headers=alice.headers
    )
    cid = created.json()["id"]
    reply = await client.post(
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "How do I write a skill for skillhive?"},
        headers=alice.headers,
    )
    assert reply.status_code == 200, reply.text
    message = reply.json()
    assert message["status"] == "ok"
    assert "offline" in message["content"].lower()
    assert [s["name"] for s in message["loaded_skills"]] == ["skillhive-skill-authoring"]


async def test_a_failing_model_stores_an_error_answer(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await chat.conversation(client)
    openai_server.script(Reply(status=500, text="upstream exploded"))
    reply = await send(client, chat, cid, "hello")
    assert reply.status_code == 200
    message = reply.json()
    assert message["status"] == "error"
    assert message["error"]["code"]
    assert message["loaded_skills"] is None
    listed = await client.get(f"/api/v1/conversations/{cid}/messages", headers=chat.account.headers)
    assert [m["role"] for m in listed.json()["items"]] == ["user", "assistant"]


async def test_second_send_during_a_turn_is_409_and_cancel_stores_a_cancelled_answer(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await chat.conversation(client)
    url = f"/api/v1/conversations/{cid}"
    async with held_turn(client, chat, openai_server, cid, "a long answer held open") as sending:
        touched = (await client.get(url, headers=chat.account.headers)).json()
        second = await send(client, chat, cid, "second")
        assert_error(second, 409, "turn_in_progress")
        # the refused send did not touch the conversation (title, updated_at)
        assert (await client.get(url, headers=chat.account.headers)).json() == touched
        cancelled = await client.post(
            f"/api/v1/conversations/{cid}/cancel", headers=chat.account.headers
        )
        assert cancelled.json() == {"cancelled": True}
    answer = (await sending).json()
    assert answer["status"] == "cancelled"
    assert answer["error"]["code"] == "cancelled"
    listed = await client.get(f"/api/v1/conversations/{cid}/messages", headers=chat.account.headers)
    assert [m["content"] for m in listed.json()["items"] if m["role"] == "user"] == ["a question"]
    # the conversation is free again
    openai_server.script(Reply(text="ok"))
    assert (await send(client, chat, cid, "again")).json()["content"] == "ok"


async def test_sending_to_another_users_busy_conversation_is_404_not_409(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer, bob: Account
) -> None:
    cid = await chat.conversation(client)
    async with held_turn(client, chat, openai_server, cid, "held open") as sending:
        intruder = await client.post(
            f"/api/v1/conversations/{cid}/messages", json={"content": "hi"}, headers=bob.headers
        )
        assert_error(intruder, 404, "conversation_not_found")
        missing = await client.post(
            "/api/v1/conversations/no-such-id/messages", json={"content": "hi"}, headers=bob.headers
        )
        assert missing.json() == intruder.json()  # indistinguishable from no conversation at all
    assert (await sending).json()["content"] == "held open"


async def test_the_first_message_names_an_untitled_conversation_and_no_other_does(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer, bob: Account
) -> None:
    untitled = await chat.conversation(client)
    titled = await client.post(
        "/api/v1/conversations",
        json={"ghost": chat.ghost, "title": "Kept"},
        headers=chat.account.headers,
    )
    assert titled.status_code == 201, titled.text
    for cid, text in [(untitled, "  first\n words  "), (titled.json()["id"], "ignored")]:
        openai_server.script(Reply(text="ok"))
        assert (await send(client, chat, cid, text)).status_code == 200
    openai_server.script(Reply(text="ok"))
    assert (await send(client, chat, untitled, "second words")).status_code == 200
    listed = await client.get("/api/v1/conversations", headers=chat.account.headers)
    titles = {c["id"]: c["title"] for c in listed.json()["items"]}
    assert (titles[untitled], titles[titled.json()["id"]]) == ("first words", "Kept")
    # Someone else's send neither stores a message nor renames it.
    intruder = await send(client, ChatSetup(bob, chat.ghost), untitled, "renamed?")
    assert_error(intruder, 404, "conversation_not_found")
    messages = await client.get(
        f"/api/v1/conversations/{untitled}/messages", headers=chat.account.headers
    )
    assert [m["content"] for m in messages.json()["items"] if m["role"] == "user"] == [
        "  first\n words  ",
        "second words",
    ]


async def test_conversations_are_private(
    client: httpx.AsyncClient, chat: ChatSetup, bob: Account
) -> None:
    cid = await chat.conversation(client)
    for method, path, body in [
        ("GET", f"/api/v1/conversations/{cid}", None),
        ("PATCH", f"/api/v1/conversations/{cid}", {"title": "mine now"}),
        ("DELETE", f"/api/v1/conversations/{cid}", None),
        ("GET", f"/api/v1/conversations/{cid}/messages", None),
        ("POST", f"/api/v1/conversations/{cid}/messages", {"content": "hi"}),
        ("POST", f"/api/v1/conversations/{cid}/cancel", None),
    ]:
        response = await client.request(method, path, json=body, headers=bob.headers)
        assert_error(response, 404, "conversation_not_found")
    other = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/helper"}, headers=bob.headers
    )
    assert other.status_code == 404  # alice's Ghost is not bob's to use
    assert (await client.get("/api/v1/conversations", headers=bob.headers)).json()["items"] == []
    mine = await client.get("/api/v1/conversations", headers=chat.account.headers)
    assert [c["id"] for c in mine.json()["items"]] == [cid]
    assert mine.json()["items"][0]["title"] != "mine now"
    assert (
        await client.delete(f"/api/v1/conversations/{cid}", headers=chat.account.headers)
    ).status_code == 204


async def test_a_reannounced_earlier_turn_does_not_answer_the_current_one(
    app: Any, client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    cid = await chat.conversation(client)
    async with held_turn(client, chat, openai_server, cid, "the real answer") as waiting:
        # What a retried, already answered earlier turn announces (after a worker restart).
        stale = TurnEnded(conversation_id=cid, message_id=-1, reply=None)
        await app.state.chat.transport.publish(stale)
    assert (await waiting).json()["content"] == "the real answer"


async def test_conversations_and_messages_are_paginated(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    created = [await chat.conversation(client) for _ in range(5)]
    pages, token = [], None
    while True:
        query = "?limit=2" + (f"&continue={token}" if token else "")
        page = (
            await client.get("/api/v1/conversations" + query, headers=chat.account.headers)
        ).json()
        pages.append([c["id"] for c in page["items"]])
        token = page["continue"]
        if token is None:
            break
    assert [len(p) for p in pages] == [2, 2, 1]
    assert sum(pages, []) == list(reversed(created))  # newest first, each exactly once

    cid = created[0]
    for i in range(3):
        openai_server.script(Reply(text=f"answer {i}"))
        await send(client, chat, cid, f"question {i}")
    url = f"/api/v1/conversations/{cid}/messages?limit=4"
    first = (await client.get(url, headers=chat.account.headers)).json()
    rest = (
        await client.get(url + f"&continue={first['continue']}", headers=chat.account.headers)
    ).json()
    contents = [m["content"] for m in first["items"] + rest["items"]]
    assert contents == [
        "question 0",
        "answer 0",
        "question 1",
        "answer 1",
        "question 2",
        "answer 2",
    ]
    assert rest["continue"] is None
    for bad in (
        "/api/v1/conversations?continue=nope",
        f"/api/v1/conversations/{cid}/messages?continue=x",
    ):
        assert_error(await client.get(bad, headers=chat.account.headers), 422, "invalid_cursor")


async def test_a_turn_whose_conversation_vanished_ends_once_with_an_error(app: Any) -> None:
    """E.g. the conversation was deleted while a worker ran its turn: the turn must end (and be
    acknowledged), not raise and be retried forever."""
    runner = app.state.chat.runner
    released = []

    async def release() -> None:
        released.append(True)

    async with app.state.chat.transport.subscribe("gone") as events:
        result = await runner.run("gone", 424242, release=release)
        final = await anext(events)
    assert result is None
    assert released == [True]
    assert isinstance(final, TurnEnded) and final.error is not None
    assert final.error.code == "turn_not_stored"
    assert final.reply is None and final.message_id == 424242


async def test_a_cancel_request_stops_the_turn_even_if_the_task_cancellation_was_lost(
    app: Any, client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    """redis-py can swallow a task cancellation; the runner's own flag still stops the turn."""
    cid = await chat.conversation(client)
    text = "tokens keep coming after the cancel"
    async with held_turn(client, chat, openai_server, cid, text) as sending:
        listed = await client.get(
            f"/api/v1/conversations/{cid}/messages", headers=chat.account.headers
        )
        user_message_id = listed.json()["items"][0]["id"]
        app.state.chat.runner.request_cancel(user_message_id)  # no task.cancel()
    answer = (await sending).json()
    assert answer["status"] == "cancelled"
    assert answer["content"] != text


async def test_a_retried_finished_turn_is_announced_again_not_run_twice(
    app: Any, client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    """What a worker does when it reclaims a turn whose answer was already stored."""
    cid = await chat.conversation(client)
    openai_server.script(Reply(text="only once"))
    first = (await send(client, chat, cid, "hi")).json()
    runner = app.state.chat.runner
    released = []

    async def release() -> None:
        released.append(True)

    async with app.state.chat.transport.subscribe(cid) as events:
        again = await runner.run(cid, first["reply_to"], release=release)
        announced = await anext(events)
    assert again is not None and again.id == first["id"]
    assert released == [True]  # the conversation is freed for the next send
    assert isinstance(announced, TurnEnded) and announced.error is None
    assert announced.reply is not None and announced.reply.id == first["id"]
    assert announced.reply.content == "only once"
    assert len(openai_server.requests) == 1  # the model was not called again
    listed = await client.get(f"/api/v1/conversations/{cid}/messages", headers=chat.account.headers)
    assert [m["role"] for m in listed.json()["items"]] == ["user", "assistant"]


async def test_a_turn_whose_ghost_was_deleted_ends_with_ghost_not_found(
    client: httpx.AsyncClient, chat: ChatSetup, openai_server: FakeOpenAIServer
) -> None:
    """The window's statement finds no Ghost; the turn's own read gives the usual error."""
    cid = await chat.conversation(client)
    namespace, _, name = chat.ghost.partition("/")
    deleted = await client.delete(
        f"/api/v1/namespaces/{namespace}/ghosts/{name}", headers=chat.account.headers
    )
    assert deleted.status_code in (200, 204), deleted.text
    reply = await send(client, chat, cid, "hello")
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["status"] == "error" and answer["error"]["code"] == "ghost_not_found"
    assert openai_server.requests == []  # no model call without a Ghost
