"""A turn has a deadline: a model endpoint that never answers ends it with `turn_timeout`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, ghost_crd
from tests.support.hanging import hanging_endpoint

DEADLINE_S = 5.0


@pytest.fixture
def hung_model() -> Iterator[str]:
    with hanging_endpoint() as url:
        yield url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        egress_allow=LOOPBACK_ALLOW,
        turn_deadline_s=DEADLINE_S,
    )


async def hung_conversation(client: httpx.AsyncClient, account: Account, url: str) -> str:
    secret = await client.put(
        "/api/v1/secrets/MODEL_KEY", json={"value": "sk-test"}, headers=account.headers
    )
    assert secret.status_code in (201, 204)
    model = {"name": "hung", "baseUrl": url, "apiKeySecret": "MODEL_KEY"}
    ghost = await client.post(
        "/api/v1/namespaces/dev/ghosts",
        json=ghost_crd("hung", model=model),
        headers=account.headers,
    )
    assert ghost.status_code == 201, ghost.text
    created = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/hung"}, headers=account.headers
    )
    return str(created.json()["id"])


async def test_a_hanging_model_endpoint_ends_the_turn_with_a_stored_turn_timeout(
    client: httpx.AsyncClient, alice: Account, hung_model: str
) -> None:
    cid = await hung_conversation(client, alice, hung_model)
    async with client.stream(
        "POST",
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "are you there?"},
        headers={**alice.headers, "Accept": "text/event-stream"},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        frames = (await response.aread()).decode().strip().split("\n\n")
    last = frames[-1].splitlines()
    assert last[0] == "event: error"  # announced as the turn's end
    announced = json.loads(last[1].removeprefix("data: "))
    assert announced["code"] == "turn_timeout"
    assert announced["reply"]["error"]["code"] == "turn_timeout"

    listed = await client.get(f"/api/v1/conversations/{cid}/messages", headers=alice.headers)
    stored = listed.json()["items"][-1]
    assert stored["role"] == "assistant" and stored["status"] == "error"
    assert stored["error"]["code"] == "turn_timeout"
    # The conversation is free again: the next send is not refused with 409.
    again = await client.post(
        f"/api/v1/conversations/{cid}/messages",
        json={"content": "still there?"},
        headers=alice.headers,
        timeout=60,
    )
    assert again.status_code == 200 and again.json()["error"]["code"] == "turn_timeout"
