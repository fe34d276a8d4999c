"""Conversation artifacts end to end: a public skill's script writes files in the sandbox during
a REST turn, and its owner downloads them; uploads reach the next turns' workspace."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backend.app import create_app
from backend.auth import service as auth_service
from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.artifacts import plain_conversation, publish, script_runs
from tests.support.chat import LOOPBACK_ALLOW, scripted_conversation
from tests.support.errors import assert_error
from tests.support.lifespan import running
from tests.support.openai_server import FakeOpenAIServer
from tests.support.skill_run import ask, run_result, working_sandbox

REPORT = """\
import os, pathlib
out = pathlib.Path(os.environ["OUTPUT_DIR"])
src = pathlib.Path("inputs/data.txt")
rows = src.read_text().splitlines() if src.exists() else []
(out / "report.csv").write_text("rows\\n%d\\n" % len(rows))
(out / "page.html").write_text("<script>alert(1)</script>")
print("rows", len(rows))
"""


def reporter_skill() -> bytes:
    return zips.build(
        {
            "SKILL.md": "---\nname: reporter\ndescription: Writes reports.\n---\n"
            "Run `python3 $SKILL_DIR/scripts/report.py`.\n",
            "scripts/report.py": REPORT,
        },
        folder="reporter",
    )


REPORT_RUN = "python3 $SKILL_DIR/scripts/report.py"


async def reporter_conversation(
    client: httpx.AsyncClient, alice: Account, admin: Account, server: FakeOpenAIServer
) -> str:
    await publish(client, admin, reporter_skill())
    return await scripted_conversation(client, alice, server, "reporter")


async def test_a_skill_scripts_output_downloads_as_an_artifact_of_its_owner_only(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    bob: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    await working_sandbox(app)
    cid = await reporter_conversation(client, alice, admin, openai_server)
    script_runs(openai_server, "reporter", REPORT_RUN)

    answer = await ask(client, alice, cid)

    outputs = {o["path"]: o for o in run_result(openai_server)["output_files"]}
    csv = outputs["out/report.csv"]
    assert (csv["mime_type"], csv["content"]) == ("text/csv", "rows\n0\n")
    listed = await client.get(f"/api/v1/conversations/{cid}/artifacts", headers=alice.headers)
    assert listed.status_code == 200
    items = {i["name"]: i for i in listed.json()["items"]}
    assert set(items) == {"report.csv", "page.html"}
    item = items["report.csv"]
    assert (item["kind"], item["size"], item["message_id"]) == ("output", 7, answer["reply_to"])
    assert item["url"] == csv["url"] == f"/api/v1/conversations/{cid}/artifacts/{item['id']}"
    download = await client.get(item["url"], headers=alice.headers)
    assert download.status_code == 200
    assert download.content == b"rows\n0\n"
    assert download.headers["content-type"] == "text/csv; charset=utf-8"
    assert download.headers["content-disposition"].startswith('attachment; filename="report.csv"')
    stranger = await client.get(item["url"], headers=bob.headers)
    assert_error(stranger, 404, "conversation_not_found")
    listing = await client.get(f"/api/v1/conversations/{cid}/artifacts", headers=bob.headers)
    assert_error(listing, 404, "conversation_not_found")


async def test_a_risky_artifact_cannot_run_in_the_gateways_origin(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    await working_sandbox(app)
    cid = await reporter_conversation(client, alice, admin, openai_server)
    script_runs(openai_server, "reporter", REPORT_RUN)
    await ask(client, alice, cid)
    html = next(
        o for o in run_result(openai_server)["output_files"] if o["path"] == "out/page.html"
    )

    download = await client.get(html["url"], headers=alice.headers)

    assert download.content == b"<script>alert(1)</script>"
    assert download.headers["content-type"] == "application/octet-stream"
    assert download.headers["x-content-type-options"] == "nosniff"
    assert download.headers["content-security-policy"].startswith("sandbox")
    assert download.headers["content-disposition"].startswith("attachment;")


async def test_the_turns_events_announce_each_artifact_with_its_link(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    await working_sandbox(app)
    cid = await reporter_conversation(client, alice, admin, openai_server)
    script_runs(openai_server, "reporter", REPORT_RUN)
    sse = {**alice.headers, "Accept": "text/event-stream"}
    url = f"/api/v1/conversations/{cid}/messages"
    async with client.stream("POST", url, json={"content": "go"}, headers=sse) as stream:
        lines = [line async for line in stream.aiter_lines()]

    announced = [
        json.loads(data.removeprefix("data: "))
        for event, data in zip(lines, lines[1:], strict=False)
        if event == "event: artifact"
    ]
    assert sorted(a["name"] for a in announced) == ["page.html", "report.csv"]
    csv = next(a for a in announced if a["name"] == "report.csv")
    assert (csv["mime_type"], csv["size"]) == ("text/csv", 7)
    assert (await client.get(csv["url"], headers=alice.headers)).content == b"rows\n0\n"


async def test_another_conversations_artifact_id_is_not_found(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    await working_sandbox(app)
    cid = await reporter_conversation(client, alice, admin, openai_server)
    script_runs(openai_server, "reporter", REPORT_RUN)
    await ask(client, alice, cid)
    artifact_id = run_result(openai_server)["output_files"][0]["artifact_id"]
    other = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/runner"}, headers=alice.headers
    )

    response = await client.get(
        f"/api/v1/conversations/{other.json()['id']}/artifacts/{artifact_id}",
        headers=alice.headers,
    )

    assert_error(response, 404, "artifact_not_found")


async def upload(
    client: httpx.AsyncClient, account: Account, cid: str, name: str, data: bytes, **kw: Any
) -> httpx.Response:
    return await client.post(
        f"/api/v1/conversations/{cid}/files",
        files={"file": (name, data, "text/plain")},
        headers=account.headers,
        **kw,
    )


async def test_an_uploaded_file_is_in_the_next_turns_workspace(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    await working_sandbox(app)
    cid = await reporter_conversation(client, alice, admin, openai_server)
    uploaded = await upload(client, alice, cid, "data.txt", b"a\nb\nc\n")
    assert uploaded.status_code == 201, uploaded.text
    assert (uploaded.json()["kind"], uploaded.json()["size"]) == ("input", 6)
    assert uploaded.json()["sha256"] == hashlib.sha256(b"a\nb\nc\n").hexdigest()
    script_runs(openai_server, "reporter", REPORT_RUN)

    await ask(client, alice, cid)

    assert run_result(openai_server)["stdout"] == "rows 3\n"
    files = await client.get(f"/api/v1/conversations/{cid}/files", headers=alice.headers)
    assert [f["name"] for f in files.json()["items"]] == ["data.txt"]


async def test_a_raw_upload_takes_its_name_from_the_query_and_replaces_one_of_that_name(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    cid = await plain_conversation(client, alice)
    url = f"/api/v1/conversations/{cid}/files?name=notes.md"
    raw = {**alice.headers, "Content-Type": "application/octet-stream"}
    assert (await client.post(url, content=b"one", headers=raw)).status_code == 201
    second = await client.post(url, content=b"second", headers=raw)
    assert second.status_code == 201
    assert second.json()["sha256"] == hashlib.sha256(b"second").hexdigest()

    files = await client.get(f"/api/v1/conversations/{cid}/files", headers=alice.headers)

    assert [(f["name"], f["size"]) for f in files.json()["items"]] == [("notes.md", 6)]
    download = await client.get(second.json()["url"], headers=alice.headers)
    assert download.content == b"second"


@pytest.mark.parametrize(
    "name",
    [
        "../etc/passwd",
        "a/b.txt",
        "..",
        "",
        " padded",
        "bell\x07.txt",
        "rtl\u202etxt.exe",
        "x" * 256,
    ],
)
async def test_an_unsafe_file_name_is_refused(
    client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer, name: str
) -> None:
    cid = await plain_conversation(client, alice)
    raw = {**alice.headers, "Content-Type": "application/octet-stream"}

    response = await client.post(
        f"/api/v1/conversations/{cid}/files", params={"name": name}, content=b"x", headers=raw
    )

    assert_error(response, 422, "invalid_file_name")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "egress_allow": LOOPBACK_ALLOW,
            "conversation_file_max_bytes": 1024,
            "conversation_files_bytes": 1500,
        }
    )


async def test_uploads_are_bounded_per_file_and_per_conversation(
    client: httpx.AsyncClient, alice: Account, bob: Account, openai_server: FakeOpenAIServer
) -> None:
    cid = await plain_conversation(client, alice)

    assert_error(await upload(client, alice, cid, "big", b"x" * 1025), 413, "file_too_large")
    assert (await upload(client, alice, cid, "a", b"x" * 1000)).status_code == 201
    assert_error(await upload(client, alice, cid, "b", b"x" * 600), 413, "conversation_files_full")
    assert (await upload(client, alice, cid, "a", b"x" * 1000)).status_code == 201  # replaces
    assert_error(await upload(client, bob, cid, "c", b"x"), 404, "conversation_not_found")


@pytest.fixture
async def kept_app(settings: Settings) -> AsyncIterator[FastAPI]:
    update = {"sandbox_workspace_scope": "conversation", "conversation_file_max_bytes": 4096}
    application = create_app(settings.model_copy(update=update))
    async with running(application):
        yield application


async def test_a_conversation_workspace_outlives_the_turn_when_enabled(
    kept_app: FastAPI, openai_server: FakeOpenAIServer
) -> None:
    await working_sandbox(kept_app)
    transport = httpx.ASGITransport(app=kept_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        async with kept_app.state.sessionmaker() as session:
            admin_user = await auth_service.create_user(session, "root", admin=True)
            user = await auth_service.create_user(session, "carol")
            admin = Account(
                admin_user.id,
                "root",
                (await auth_service.issue_token(session, admin_user, "t")).secret,
            )
            carol = Account(
                user.id, "carol", (await auth_service.issue_token(session, user, "t")).secret
            )
            await session.commit()
        cid = await reporter_conversation(client, carol, admin, openai_server)
        script_runs(openai_server, "reporter", "echo kept > notes.txt")
        await ask(client, carol, cid)
        script_runs(openai_server, "reporter", "cat notes.txt")
        await ask(client, carol, cid)

    assert run_result(openai_server)["stdout"] == "kept\n"
