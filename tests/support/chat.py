"""Chat over REST on the scripted model server: a user with a skill and a Ghost (`make_setup`),
Ghost CRDs, sending messages, held turns and SSE parsing."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support import zips
from tests.support.accounts import Account
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.skills import upload
from tests.support.wait import eventually

PDF_PROMPT = "PDF-INSTRUCTIONS: always check the page count first."


# The scripted servers listen on loopback, which tenant endpoints reach only when allowed.
LOOPBACK_ALLOW = ["127.0.0.1"]


@dataclass
class ChatSetup:
    account: Account
    ghost: str  # "ns/name"

    async def conversation(self, client: httpx.AsyncClient) -> str:
        response = await client.post(
            "/api/v1/conversations", json={"ghost": self.ghost}, headers=self.account.headers
        )
        assert response.status_code == 201, response.text
        return str(response.json()["id"])


def ghost_crd(name: str, *, model: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "skillhive.io/v1",
        "kind": "Ghost",
        "metadata": {"name": name},
        "spec": {"systemPrompt": "You are a helpful assistant.", "model": model, **spec},
    }


async def scripted_conversation(
    client: httpx.AsyncClient,
    account: Account,
    server: FakeOpenAIServer,
    skill: str,
    *,
    ghost: str = "runner",
    **spec: Any,
) -> str:
    """A new conversation with Ghost `ghost` using `skill` (and further `spec` fields), on the
    scripted model server (its key stored as the account's secret `MODEL_KEY`); its id."""
    secret = await client.put(
        "/api/v1/secrets/MODEL_KEY", json={"value": "sk-test"}, headers=account.headers
    )
    assert secret.status_code in (201, 204)
    model = {"name": "scripted", "baseUrl": server.base_url, "apiKeySecret": "MODEL_KEY"}
    body = ghost_crd(ghost, model=model, skills=[skill], **spec)
    made = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
    assert made.status_code == 201, made.text
    created = await client.post(
        "/api/v1/conversations", json={"ghost": f"dev/{ghost}"}, headers=account.headers
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def make_setup(
    client: httpx.AsyncClient,
    account: Account,
    openai_server: FakeOpenAIServer,
    **spec: Any,
) -> ChatSetup:
    skill = zips.build(
        {
            "SKILL.md": "---\nname: pdf-tools\ndescription: Read and fill PDF forms.\n---\n"
            + PDF_PROMPT
            + "\n"
        },
        folder="pdf-tools",
    )
    assert (await upload(client, account.headers, skill)).status_code == 201
    secret = await client.put(
        "/api/v1/secrets/MODEL_KEY", json={"value": "sk-test-key"}, headers=account.headers
    )
    assert secret.status_code in (201, 204)
    model = {"name": "scripted", "baseUrl": openai_server.base_url, "apiKeySecret": "MODEL_KEY"}
    body = ghost_crd("helper", model=model, skills=["pdf-tools"], **spec)
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
    assert created.status_code == 201, created.text
    return ChatSetup(account=account, ghost="dev/helper")


def system_prompt(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def load(skill: str) -> Reply:
    return Reply(tool_calls=[ToolCall("load_skill", {"skill_name": skill})])


async def send(client: httpx.AsyncClient, chat: ChatSetup, cid: str, text: str) -> httpx.Response:
    return await client.post(
        f"/api/v1/conversations/{cid}/messages",
        json={"content": text},
        headers=chat.account.headers,
    )


@asynccontextmanager
async def held_turn(
    client: httpx.AsyncClient,
    chat: ChatSetup,
    openai_server: FakeOpenAIServer,
    cid: str,
    answer: str,
) -> AsyncIterator[asyncio.Task[httpx.Response]]:
    """A turn whose model answer is held open after its first token until the block ends; yields
    the task of the send (await it after the block for the stored answer)."""
    gate = threading.Event()
    openai_server.script(Reply(text=answer, gate=gate))
    running = asyncio.create_task(send(client, chat, cid, "a question"))
    try:

        async def started() -> bool:
            return len(openai_server.requests) == 1

        await eventually(started)
        yield running
    finally:
        gate.set()


def parse_sse(body: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events
