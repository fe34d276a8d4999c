"""skill_run end to end: a Ghost's skill runs its script in the sandbox during a REST turn."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from backend.app import create_app
from backend.auth import service as auth_service
from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import scripted_conversation
from tests.support.lifespan import running
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.skill_run import ask, run_result, working_sandbox
from tests.support.skills import upload

HELLO = "import sys\nprint('hello from the sandbox', sys.argv[1])\n"


def runner_skill(name: str) -> bytes:
    return zips.build(
        {
            "SKILL.md": f"---\nname: {name}\ndescription: Says hello.\n---\n"
            "Run `python3 $SKILL_DIR/scripts/hello.py NAME`.\n",
            "scripts/hello.py": HELLO,
        },
        folder=name,
    )


def offered(server: FakeOpenAIServer) -> list[str]:
    return [t["function"]["name"] for t in server.requests[0].get("tools", [])]


def run_script(server: FakeOpenAIServer, skill: str) -> None:
    server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": skill})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "skill_run",
                    {"skill": skill, "command": "python3 $SKILL_DIR/scripts/hello.py Ann"},
                )
            ]
        ),
        Reply(text="It said hello."),
    )


async def test_a_public_skill_runs_its_script(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    await working_sandbox(app)
    published = await client.post(
        "/api/v1/public/skills",
        files={"file": ("skill.zip", runner_skill("hello-runner"), "application/zip")},
        headers=admin.headers,
    )
    assert published.status_code == 201, published.text
    cid = await scripted_conversation(client, alice, openai_server, "hello-runner")
    run_script(openai_server, "hello-runner")

    answer = await ask(client, alice, cid)

    assert answer["content"] == "It said hello."
    assert [c["name"] for c in answer["tool_calls"]] == ["load_skill", "skill_run"]
    assert "skill_run" in offered(openai_server)
    result = run_result(openai_server)
    assert (result["exit_code"], result["stdout"]) == (0, "hello from the sandbox Ann\n")


async def test_a_users_own_skill_gets_no_skill_run_by_default(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    await working_sandbox(app)
    assert (await upload(client, alice.headers, runner_skill("mine"))).status_code == 201
    cid = await scripted_conversation(client, alice, openai_server, "mine")
    openai_server.script(Reply(text="ok"))

    await ask(client, alice, cid)

    assert offered(openai_server) == ["load_skill"]


@pytest.fixture
async def user_skills_app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings.model_copy(update={"sandbox_user_skills": True}))
    async with running(application):
        yield application


async def test_a_users_own_skill_runs_when_the_operator_allows_it(
    user_skills_app: FastAPI, openai_server: FakeOpenAIServer
) -> None:
    await working_sandbox(user_skills_app)
    transport = httpx.ASGITransport(app=user_skills_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        async with user_skills_app.state.sessionmaker() as session:
            user = await auth_service.create_user(session, "carol")
            issued = await auth_service.issue_token(session, user, "test")
            await session.commit()
        carol = Account(id=user.id, name="carol", token=issued.secret)
        assert (await upload(client, carol.headers, runner_skill("mine"))).status_code == 201
        cid = await scripted_conversation(client, carol, openai_server, "mine")
        run_script(openai_server, "mine")

        answer = await ask(client, carol, cid)

    assert [c["name"] for c in answer["tool_calls"]] == ["load_skill", "skill_run"]
    assert run_result(openai_server)["stdout"] == "hello from the sandbox Ann\n"
