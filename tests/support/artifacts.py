"""Conversations that run skill scripts and publish skills, for the artifact and skill-install
API tests."""

from __future__ import annotations

import httpx

from tests.support.accounts import Account
from tests.support.chat import ghost_crd
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall


async def publish(client: httpx.AsyncClient, admin: Account, archive: bytes) -> None:
    published = await client.post(
        "/api/v1/public/skills",
        files={"file": ("skill.zip", archive, "application/zip")},
        headers=admin.headers,
    )
    assert published.status_code == 201, published.text


def script_runs(server: FakeOpenAIServer, skill: str, *commands: str) -> None:
    server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": skill})]),
        *(
            Reply(tool_calls=[ToolCall("skill_run", {"skill": skill, "command": c})])
            for c in commands
        ),
        Reply(text="Done."),
    )


async def plain_conversation(client: httpx.AsyncClient, account: Account) -> str:
    """A conversation of a Ghost without skills (uploads need no turn)."""
    model = {"name": "scripted", "baseUrl": "http://127.0.0.1:9/v1"}
    body = ghost_crd("plain", model=model)
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
    assert created.status_code == 201, created.text
    found = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/plain"}, headers=account.headers
    )
    assert found.status_code == 201, found.text
    return str(found.json()["id"])
