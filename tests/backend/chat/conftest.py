"""Chat fixtures: a user with a skill, a secret and a Ghost talking to the scripted model server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.config import Settings
from tests.backend.api.skill_helpers import upload
from tests.conftest import Account
from tests.fake_openai_server import FakeOpenAIServer
from tests.support import zips

PDF_PROMPT = "PDF-INSTRUCTIONS: always check the page count first."


# The scripted servers listen on loopback, which tenant endpoints reach only when allowed.
LOOPBACK_ALLOW = ["127.0.0.1"]


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url, data_dir=tmp_path / "data", egress_allow=LOOPBACK_ALLOW
    )


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


@pytest.fixture
async def chat(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> ChatSetup:
    return await make_setup(client, alice, openai_server)
