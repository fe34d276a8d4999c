"""Turns that run a skill's scripts in the real sandbox, and what the model saw of the result."""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi import FastAPI

from tests.support.accounts import Account
from tests.support.openai_server import FakeOpenAIServer
from tests.support.sandbox import require_sandbox


async def working_sandbox(app: FastAPI) -> None:
    require_sandbox(await app.state.sandbox.availability())


async def ask(client: httpx.AsyncClient, account: Account, cid: str) -> dict[str, Any]:
    response = await client.post(
        f"/api/v1/conversations/{cid}/messages", json={"content": "hi"}, headers=account.headers
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def run_result(server: FakeOpenAIServer) -> dict[str, Any]:
    """The skill_run result as the model saw it (the full JSON, not the stored summary)."""
    tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    found: dict[str, Any] = json.loads(tool_messages[-1]["content"])
    return found
