"""Level 3 end to end: a REST turn whose model loads a skill, then reads the skill's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, ghost_crd
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.skills import upload

PAGE_BYTES = 64  # SKILLHIVE_SKILL_FILE_READ_BYTES for this module: pages are visible
AUTHORING = "skillhive-skill-authoring"
ERROR_CODES = (
    Path(__file__).resolve().parents[3] / "skills" / AUTHORING / "references" / "error-codes.md"
)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        egress_allow=LOOPBACK_ALLOW,
        skill_file_read_bytes=PAGE_BYTES,
    )


def notes_skill(secret: str) -> bytes:
    return zips.build(
        {
            "SKILL.md": "---\nname: notes\ndescription: Keeps notes.\n---\n"
            "Read references/notes.md before answering.\n",
            "references/notes.md": f"The secret word is {secret}.\n",
        },
        folder="notes",
    )


async def conversation(
    client: httpx.AsyncClient, account: Account, server: FakeOpenAIServer, skills: list[str]
) -> str:
    secret = await client.put(
        "/api/v1/secrets/MODEL_KEY", json={"value": "sk-test"}, headers=account.headers
    )
    assert secret.status_code in (201, 204)
    model = {"name": "scripted", "baseUrl": server.base_url, "apiKeySecret": "MODEL_KEY"}
    body = ghost_crd("reader", model=model, skills=skills)
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
    assert created.status_code == 201, created.text
    started = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/reader"}, headers=account.headers
    )
    assert started.status_code == 201, started.text
    return str(started.json()["id"])


async def ask(client: httpx.AsyncClient, account: Account, cid: str) -> dict[str, Any]:
    response = await client.post(
        f"/api/v1/conversations/{cid}/messages", json={"content": "hi"}, headers=account.headers
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def load_then(skill: str, *calls: ToolCall) -> list[Reply]:
    load = Reply(tool_calls=[ToolCall("load_skill", {"skill_name": skill})])
    return [load, *(Reply(tool_calls=[c]) for c in calls), Reply(text="done")]


def read(skill: str, path: str, **args: Any) -> ToolCall:
    return ToolCall("read_skill_file", {"skill": skill, "path": path, **args})


def tool_results(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def system_prompt(server: FakeOpenAIServer, call: int) -> str:
    (system,) = [m for m in server.requests[call]["messages"] if m["role"] == "system"]
    return str(system["content"])


async def test_the_builtin_authoring_skill_reads_its_error_codes_reference(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    cid = await conversation(client, alice, openai_server, [AUTHORING])
    openai_server.script(
        *load_then(
            AUTHORING,
            read(AUTHORING, "references/error-codes.md"),
            read(AUTHORING, "references/error-codes.md", offset=PAGE_BYTES),
        )
    )

    answer = await ask(client, alice, cid)

    assert answer["content"] == "done"
    assert "references/error-codes.md (" in system_prompt(openai_server, 1)
    first, second = (json.loads(m["content"]) for m in tool_results(openai_server)[1:])
    text = ERROR_CODES.read_bytes()
    assert first["size"] == len(text) and first["next_offset"] == PAGE_BYTES
    assert (first["content"] + second["content"]).encode() == text[: second["next_offset"]]
    assert first["content"].startswith("# Upload errors and warnings")


async def test_a_users_own_skill_reads_its_reference_and_never_another_users(
    client: httpx.AsyncClient, alice: Account, bob: Account, openai_server: FakeOpenAIServer
) -> None:
    for account, word in ((alice, "alpaca"), (bob, "bobcat")):
        uploaded = await upload(client, account.headers, notes_skill(word))
        assert uploaded.status_code == 201, uploaded.text
    cid = await conversation(client, alice, openai_server, ["notes"])
    openai_server.script(
        *load_then(
            "notes",
            ToolCall("list_skill_files", {"skill": "notes"}),
            read("notes", "references/notes.md"),
        )
    )

    await ask(client, alice, cid)

    _, listing, page = tool_results(openai_server)
    assert [f["path"] for f in json.loads(listing["content"])["files"]] == [
        "SKILL.md",
        "references/notes.md",
    ]
    assert json.loads(page["content"])["content"] == "The secret word is alpaca.\n"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (read("other-notes", "references/notes.md"), "Unknown skill 'other-notes'"),
        (read(AUTHORING, "references/error-codes.md"), "not active"),
        (read("notes", "../" + AUTHORING + "/SKILL.md"), "'..' segment"),
        (read("notes", "/etc/passwd"), "absolute path"),
        (read("notes", ".hidden"), "not part of the skill"),
        (read("notes", "references/missing.md"), "file_not_found"),
    ],
)
async def test_a_refused_read_is_a_tool_error_and_the_turn_goes_on(
    client: httpx.AsyncClient,
    alice: Account,
    bob: Account,
    openai_server: FakeOpenAIServer,
    call: ToolCall,
    message: str,
) -> None:
    for account, name in ((alice, "notes"), (bob, "other-notes")):
        data = notes_skill("x").replace(b"name: notes", f"name: {name}".encode())
        uploaded = await upload(client, account.headers, data)
        assert uploaded.status_code == 201, uploaded.text
    cid = await conversation(client, alice, openai_server, ["notes", AUTHORING])
    openai_server.script(*load_then("notes", call))

    answer = await ask(client, alice, cid)

    assert answer["content"] == "done"
    refused = tool_results(openai_server)[-1]["content"]
    assert message in refused and "Traceback" not in refused
    assert [c["error"] for c in answer["tool_calls"]] == [False, True]
