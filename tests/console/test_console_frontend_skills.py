"""Frontend skills answered by the page: Mermaid rendered by the real library (and its errors
sent back so the model can fix the diagram), and an interactive form validated and submitted.
The scripted model server records what the tool returned to the model: the browser's answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.console import (
    Console,
    Gateway,
    screenshots,
    scripted_conversation,
    send,
    tool_results,
)
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)]


def test_mermaid_is_rendered_by_the_page_and_the_answer_reaches_the_tool(
    console: Console, gateway: Gateway, openai_server: FakeOpenAIServer, artifacts: Path
) -> None:
    cid = scripted_conversation(gateway, openai_server, "mermaid-diagram")
    console.sign_in(gateway.token)
    console.open(f"/chat/{cid}")
    openai_server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "mermaid-diagram"})]),
        Reply(tool_calls=[ToolCall("render_mermaid", {"code": "graph TD; Alpha-->Beta"})]),
        Reply(text="Here is the diagram."),
    )
    send(console, "draw alpha to beta")
    figure = console.page.locator("figure.diagram").first
    expect(figure.locator("svg")).to_be_visible()
    expect(figure.locator("svg")).to_contain_text("Alpha")
    expect(figure).to_have_attribute("data-outcome", "resolved")
    done = console.page.locator(".message.assistant.status-ok").last
    expect(done.locator(".text")).to_have_text("Here is the diagram.")
    expect(done.locator("figure.diagram svg")).to_be_visible()  # kept with the stored answer
    assert tool_results(openai_server)[-1] == "rendered"
    screenshots(console.page, artifacts, "chat-mermaid")

    # a broken diagram: the renderer's own error goes back for the model to fix
    openai_server.script(
        Reply(tool_calls=[ToolCall("render_mermaid", {"code": "graph TD; A-->"})]),
        Reply(text="Sorry."),
    )
    send(console, "draw it again")
    failed = console.page.locator("figure.diagram").nth(1)
    expect(failed.locator(".render-error")).to_contain_text("did not render")
    expect(failed).to_have_attribute("data-outcome", "resolved")
    expect(console.page.locator(".message.assistant.status-ok").last.locator(".text")).to_have_text(
        "Sorry."
    )
    told = tool_results(openai_server)[-1]
    assert told.startswith("the renderer rejected the diagram: ")
    assert "Parse error" in told or "Expecting" in told, told
    assert console.errors == []


def test_a_form_is_validated_and_its_answers_reach_the_tool(
    console: Console, gateway: Gateway, openai_server: FakeOpenAIServer, artifacts: Path
) -> None:
    cid = scripted_conversation(gateway, openai_server, "interactive-form")
    console.sign_in(gateway.token)
    console.open(f"/chat/{cid}")
    questions = [
        {
            "id": "target",
            "label": "Where to deploy?",
            "type": "choice",
            "choices": ["staging", "production"],
        },
        {
            "id": "checks",
            "label": "Which checks?",
            "type": "multi_choice",
            "choices": ["lint", "tests", "bench"],
            "required": False,
        },
        {"id": "note", "label": "Anything else?", "type": "text", "required": False},
    ]
    openai_server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "interactive-form"})]),
        Reply(tool_calls=[ToolCall("ask_user", {"title": "Deployment", "questions": questions})]),
        Reply(text="Deploying."),
    )
    send(console, "deploy it")
    form = console.page.get_by_role("form", name="Deployment")
    expect(form).to_be_visible()
    # the heading is the skill's; the page says who asks (a skill cannot fake a sign-in form)
    expect(form.locator(".asked-by")).to_have_text(
        "Asked by the skill interactive-form. Never enter your API token or a password here."
    )
    screenshots(console.page, artifacts, "chat-form")
    form.get_by_role("button", name="Send answers").click()
    expect(form.locator(".field-error").first).to_have_text("This answer is required.")
    assert len(openai_server.requests) == 2  # nothing sent yet

    form.get_by_label("production").check()
    form.get_by_label("tests").check()
    form.get_by_label("lint").check()
    form.get_by_label("Anything else?").fill("  after lunch ")
    form.get_by_role("button", name="Send answers").click()
    expect(form).to_have_attribute("data-outcome", "resolved")
    expect(console.page.locator(".message.assistant.status-ok").last.locator(".text")).to_have_text(
        "Deploying."
    )
    answers = json.loads(tool_results(openai_server)[-1])
    assert answers == {
        "answers": {"target": "production", "checks": ["lint", "tests"], "note": "after lunch"}
    }
    assert console.errors == []
