"""MCP skill plans: from a skill's `plan:` section or the model, then executed where allowed."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from langchain_core.messages import AIMessage

from backend.config import Settings
from chat_shell.offline import ScriptedChatModel
from chat_shell.tools.mcp import McpServerConfig
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.errors import assert_error
from tests.support.ghosts import create, ghost
from tests.support.skills import upload

SKILLS = "/api/v1/namespaces/dev/skills"
DECLARED = """\
plan:
  - tool: echo
    arguments: {message: "{{prompt}} in {{workspace_root}}"}
    reason: say it back
  - tool: get_env
    arguments: {name: HOME}
"""


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The fixture MCP server is on loopback: reached through an explicit egress allow."""
    return settings.model_copy(
        update={"egress_allow": LOOPBACK_ALLOW, "skill_plan_execution": True}
    )


def mcp_skill(name: str, server: McpServerConfig, *, extra: str = "") -> bytes:
    servers = f"mcpServers:\n  fx: {{type: http, url: '{server.url}'}}\n"
    return zips.skill(name, extra=f"allowed-tools: echo fx/pid\n{servers}{extra}")


async def added(client: httpx.AsyncClient, alice: Account, archive: bytes) -> None:
    response = await upload(client, alice.headers, archive)
    assert response.status_code == 201, response.text


def scripted(app: FastAPI, *replies: str) -> ScriptedChatModel:
    model = ScriptedChatModel(script=[AIMessage(r) for r in replies])
    app.state.chat.model = model
    return model


async def test_a_declarative_plan_substitutes_and_refuses_tools_outside_the_allowlist(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, fixture_http: McpServerConfig
) -> None:
    model = scripted(app)  # an empty script: any model call would fail the test
    await added(client, alice, mcp_skill("echoer", fixture_http, extra=DECLARED))

    response = await client.post(
        f"{SKILLS}/echoer/plan", json={"request": "hello"}, headers=alice.headers
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["plan"] == [
        {"tool": "echo", "arguments": {"message": "hello in /workspace"}, "reason": "say it back"}
    ]
    assert body["tools"] == ["echo", "fx/pid"] and body["source"] == "declarative"
    assert any("'get_env' is not in the skill's allowed-tools" in n for n in body["notes"])
    assert model.calls == []


async def test_a_model_plan_is_bounded_checked_and_cut_to_the_step_limit(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, fixture_http: McpServerConfig
) -> None:
    steps = [{"tool": "echo", "arguments": {"message": str(i)}, "reason": "r"} for i in range(4)]
    steps.insert(1, {"tool": "crash", "arguments": {}, "reason": "why not"})
    model = scripted(app, "Here you go:\n" + json.dumps({"plan": steps}))
    await added(client, alice, mcp_skill("echoer", fixture_http))

    response = await client.post(
        f"{SKILLS}/echoer/plan", json={"request": "count"}, headers=alice.headers
    )

    body = response.json()
    assert [s["arguments"]["message"] for s in body["plan"]] == ["0", "1", "2"]
    assert body["source"] == "model"
    assert any("'crash' is not in" in n for n in body["notes"])
    assert any("cut from 4 to 3" in n for n in body["notes"])
    (call,) = model.calls
    prompt = call.system
    assert "at most 3 steps" in prompt and "echo, fx/pid" in prompt and "Do the thing." in prompt
    assert call.messages[-1].text == "count"


async def test_a_model_answer_that_is_not_json_is_an_empty_plan_with_a_note(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, fixture_http: McpServerConfig
) -> None:
    scripted(app, "I would rather not.")
    await added(client, alice, mcp_skill("echoer", fixture_http))

    body = (
        await client.post(f"{SKILLS}/echoer/plan", json={"request": "x"}, headers=alice.headers)
    ).json()

    assert body["plan"] == [] and "the model's answer was not a JSON plan" in body["notes"]


async def test_executing_a_plan_records_each_steps_result_and_stops_at_a_failure(
    client: httpx.AsyncClient, alice: Account, fixture_http: McpServerConfig
) -> None:
    await added(client, alice, mcp_skill("echoer", fixture_http))
    assert (
        await create(client, alice.headers, ghost("runner", allowPlanExecution=True))
    ).is_success
    plan: list[dict[str, Any]] = [
        {"tool": "echo", "arguments": {"message": "one"}},
        {"tool": "fx/pid", "arguments": {}},
        {"tool": "echo", "arguments": {}},  # no message: the tool refuses it
    ]
    response = await client.post(
        f"{SKILLS}/echoer/plan/execute",
        json={"plan": plan, "ghost": "runner"},
        headers=alice.headers,
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ok"] is False
    first, second, third = body["steps"]
    assert (first["status"], first["result"]) == ("ok", "fixture: one")
    assert second["status"] == "ok" and int(second["result"]) > 0
    assert third["status"] == "failed" and third["error"]["code"] == "mcp_tool_failed"
    assert third["arguments"] == {}


async def test_execution_needs_the_setting_the_ghosts_flag_and_allowed_tools(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, fixture_http: McpServerConfig
) -> None:
    await added(client, alice, mcp_skill("echoer", fixture_http))
    await added(client, alice, zips.skill("plain"))
    assert (
        await create(client, alice.headers, ghost("runner", allowPlanExecution=True))
    ).is_success
    assert (await create(client, alice.headers, ghost("careful"))).is_success
    step = {"tool": "echo", "arguments": {"message": "x"}}
    url = f"{SKILLS}/echoer/plan/execute"

    async def execute(body: dict[str, Any], target: str = url) -> httpx.Response:
        return await client.post(target, json=body, headers=alice.headers)

    careful = await execute({"plan": [step], "ghost": "careful"})
    assert_error(careful, 403, "plan_execution_not_allowed")
    assert_error(
        await execute({"plan": [step], "ghost": "nope"}), 403, "plan_execution_not_allowed"
    )
    outside = await execute({"plan": [{"tool": "crash"}], "ghost": "runner"})
    assert_error(outside, 422, "plan_invalid")
    plain = await execute({"plan": [step], "ghost": "runner"}, f"{SKILLS}/plain/plan/execute")
    assert_error(plain, 422, "skill_not_plannable")
    assert_error(await execute({"plan": [], "ghost": "runner"}), 422, "invalid_request")
    missing = await execute({"plan": [step], "ghost": "runner"}, f"{SKILLS}/gone/plan/execute")
    assert missing.status_code == 404
    app.state.settings = app.state.settings.model_copy(update={"skill_plan_execution": False})
    off = await execute({"plan": [step], "ghost": "runner"})
    assert_error(off, 403, "plan_execution_disabled")
