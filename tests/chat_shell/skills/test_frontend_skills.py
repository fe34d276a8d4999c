"""The built-in frontend skills, loaded from their ZIPs, talking to the browser via the registry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat_shell.tools.pending_requests import Outcome
from tests.support.fakes import FakeToolChatModel, call, done, load, say
from tests.support.frontend import (
    SKILLS_DIR,
    USER,
    Browser,
    builtin_package,
    builtin_spec,
    finished,
    tool_results,
)

BAD = "flowchart TD\n    a[Start] --> b(Load (cached))"
GOOD = 'flowchart TD\n    a[Start] --> b["Load (cached)"]'
TOPICS = ["class", "er", "flowchart", "gantt", "sequence", "state"]


def form(**fields: Any) -> dict[str, Any]:
    questions = [
        {"id": "period", "label": "Which period?", "type": "choice", "choices": ["Q1", "Q2"]},
        {"id": "parts", "label": "Sections?", "type": "multi_choice", "choices": ["A", "B", "C"]},
        {"id": "notes", "label": "Anything else?", "required": False},
    ]
    return {"questions": questions, "title": "Report setup", **fields}


def asking() -> FakeToolChatModel:
    """A model that loads interactive-form and asks `form()`."""
    return FakeToolChatModel(script=[load("interactive-form"), call("ask_user", **form()), say("")])


@pytest.mark.parametrize("name", ["mermaid-diagram", "interactive-form"])
def test_the_builtin_frontend_skills_validate_strictly_as_public_skills(name: str) -> None:
    _, package = builtin_package(name)  # read_package(zip_folder(...), public=True, strict=True)

    assert package.name == name and package.warnings == () and package.has_code
    assert package.spec.bind_shells == ["Chat"]
    assert package.spec.provider is not None
    assert (package.spec.provider.module, package.spec.provider.class_) == (
        "provider",
        {"mermaid-diagram": "MermaidProvider", "interactive-form": "InteractiveFormProvider"}[name],
    )
    assert "provider.py" in {f.path for f in package.files}


async def test_a_render_error_reaches_the_model_which_fixes_the_diagram() -> None:
    browser = Browser()
    model = FakeToolChatModel(
        script=[
            load("mermaid-diagram"),
            call("render_mermaid", code=f"```mermaid\n{BAD}\n```"),
            call("render_mermaid", code=GOOD),
            say("Here it is."),
        ]
    )
    turn = browser.start(model, [builtin_spec("mermaid-diagram")])

    first, outcome = await browser.answer(1, success=False, error="Parse error on line 2")
    assert outcome is Outcome.RESOLVED
    second, _ = await browser.answer(2, success=True, result={"svg": "<svg/>"})
    events = await finished(turn)

    # The browser gets the bare code (fence stripped) under the skill's name and `render`.
    assert first.conversation_id == "conv-1"
    assert {k: v for k, v in first.data.items() if k != "request_id"} == {
        "skill_name": "mermaid-diagram",
        "action": "render",
        "data": {"code": BAD},
    }
    assert second.data["data"] == {"code": GOOD}
    assert model.calls[1].tool_names == [
        "load_skill",
        "list_skill_files",  # the skill has files: level 3 comes with it
        "read_skill_file",
        "render_mermaid",
        "read_mermaid_reference",
    ]
    failed, rendered = tool_results(model)[1:]
    assert failed.status == "error" and "Parse error on line 2" in failed.text
    assert "call render_mermaid again" in failed.text
    assert rendered.status == "success" and rendered.text == "rendered"
    assert [c.error for c in done(events).tool_calls] == [False, True, False]
    assert done(events).text == "Here it is."
    assert browser.registry.metrics().resolved == 2 and browser.registry.stored() == 2


async def test_after_the_last_allowed_attempt_the_model_is_told_to_stop_retrying() -> None:
    browser = Browser()
    renders = [call("render_mermaid", code=BAD) for _ in range(2)]
    model = FakeToolChatModel(script=[load("mermaid-diagram"), *renders, say("Sorry.")])
    turn = browser.start(model, [builtin_spec("mermaid-diagram", max_attempts=2)])

    for count in (1, 2):
        await browser.answer(count, success=False, error=f"Parse error #{count}")
    await finished(turn)

    first, last = tool_results(model)[1:]
    assert "again" in first.text and "stop retrying" not in first.text
    assert "Parse error #2" in last.text and "stop retrying" in last.text


async def test_read_mermaid_reference_returns_the_packaged_docs_by_topic() -> None:
    browser = Browser()
    model = FakeToolChatModel(
        script=[
            load("mermaid-diagram"),
            call("read_mermaid_reference", topic="sequence"),
            call("read_mermaid_reference", topic="pie"),
            say("ok"),
        ]
    )

    await finished(browser.start(model, [builtin_spec("mermaid-diagram")]))

    schema = model.calls[1].tool_schema("read_mermaid_reference")["parameters"]
    assert schema["properties"]["topic"]["enum"] == TOPICS
    doc, unknown = tool_results(model)[1:]
    expected = (SKILLS_DIR / "mermaid-diagram/references/sequence.md").read_text(encoding="utf-8")
    assert doc.text == expected and doc.status == "success"
    assert unknown.status == "error"
    assert unknown.text == f"no reference 'pie'; available topics: {', '.join(TOPICS)}."
    assert browser.channel.messages == []  # the docs come from the package, not the browser


async def test_ask_user_sends_the_form_and_returns_the_checked_answers() -> None:
    browser = Browser()
    model = asking()
    turn = browser.start(model, [builtin_spec("interactive-form")])

    answers = {"period": "Q2", "parts": ["C", "A"], "notes": "  none  ", "extra": "dropped"}
    message, _ = await browser.answer(success=True, result={"answers": answers})
    await finished(turn)

    assert message.data["skill_name"] == "interactive-form" and message.data["action"] == "form"
    assert message.data["data"] == {
        "title": "Report setup",
        "questions": [
            {
                "id": "period",
                "label": "Which period?",
                "type": "choice",
                "choices": ["Q1", "Q2"],
                "required": True,
            },
            {
                "id": "parts",
                "label": "Sections?",
                "type": "multi_choice",
                "choices": ["A", "B", "C"],
                "required": True,
            },
            {"id": "notes", "label": "Anything else?", "type": "text", "required": False},
        ],
    }
    (result,) = tool_results(model)[1:]
    assert result.status == "success"
    assert json.loads(result.text) == {
        "answers": {"period": "Q2", "parts": ["A", "C"], "notes": "none"}
    }


async def test_the_ask_user_schema_shows_the_question_shape() -> None:
    browser = Browser()
    model = FakeToolChatModel(script=[load("interactive-form"), say("")])

    await finished(browser.start(model, [builtin_spec("interactive-form")]))

    params = model.calls[1].tool_schema("ask_user")["parameters"]
    question = params["properties"]["questions"]["items"]
    assert params["required"] == ["questions"] and "title" in params["properties"]
    assert question["required"] == ["id", "label"]
    assert question["properties"]["type"]["enum"] == ["text", "choice", "multi_choice"]
    assert set(question["properties"]) == {"id", "label", "type", "choices", "required"}


async def test_a_forged_answer_from_another_user_is_refused_and_the_tool_keeps_waiting() -> None:
    browser = Browser()
    model = asking()
    turn = browser.start(model, [builtin_spec("interactive-form")])
    forged = {"answers": {"period": "Q1", "parts": ["B"]}}
    real = {"answers": {"period": "Q2", "parts": ["A"]}}

    _, outcome = await browser.answer(user_id=USER + 1, success=True, result=forged)
    assert outcome is Outcome.NOT_FOUND
    assert not turn.done()  # nothing woke the tool: it still waits for its own user
    _, outcome = await browser.answer(success=True, result=real)
    _, again = await browser.answer(success=True, result=forged)
    await finished(turn)

    assert (outcome, again) == (Outcome.RESOLVED, Outcome.ALREADY_RESOLVED)
    (result,) = tool_results(model)[1:]
    assert json.loads(result.text)["answers"] == {"period": "Q2", "parts": ["A"], "notes": None}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"success": True, "result": {"cancelled": True}}, "The user cancelled the form"),
        ({"success": False, "error": "no display"}, "could not show the form: no display"),
        ({"success": True, "result": {"answers": {"period": "Q3"}}}, "malformed answer"),
        ({"success": True, "result": {"answers": {"period": "Q1"}}}, "'parts' has no answer"),
        ({"success": True, "result": ["Q1"]}, "malformed answer"),
    ],
    ids=["cancelled", "frontend-error", "unknown-choice", "missing-required", "not-an-object"],
)
async def test_a_form_without_usable_answers_tells_the_model_what_happened(
    answer: dict[str, Any], expected: str
) -> None:
    browser = Browser()
    model = asking()
    turn = browser.start(model, [builtin_spec("interactive-form")])

    await browser.answer(**answer)
    events = await finished(turn)

    (result,) = tool_results(model)[1:]
    assert expected in result.text
    # A cancel is the user's decision, not a failure; the rest are tool errors.
    assert result.status == ("success" if "cancelled" in expected else "error")
    assert done(events).text == ""


async def test_an_invalid_form_is_refused_before_the_browser_sees_it() -> None:
    browser = Browser()
    bad = {"questions": [{"id": "x", "label": "Pick", "type": "choice", "choices": ["only"]}]}
    model = FakeToolChatModel(script=[load("interactive-form"), call("ask_user", **bad), say("")])

    await finished(browser.start(model, [builtin_spec("interactive-form")]))

    (result,) = tool_results(model)[1:]
    assert result.status == "error"
    assert result.text.startswith("invalid arguments: ")
    assert "choice question 'x' needs at least 2 choices" in result.text
    assert browser.channel.messages == []


@pytest.mark.parametrize(
    ("skill", "tool", "args"),
    [
        ("mermaid-diagram", "render_mermaid", {"code": GOOD}),
        ("interactive-form", "ask_user", form()),
    ],
)
async def test_when_the_browser_does_not_answer_the_tool_says_so(
    skill: str, tool: str, args: dict[str, Any]
) -> None:
    browser = Browser()
    model = FakeToolChatModel(script=[load(skill), call(tool, **args), say("")])
    turn = browser.start(model, [builtin_spec(skill, timeout_s=0.05)])

    request = await browser.next_request()
    events = await finished(turn)
    _, late = await browser.answer(success=True, result={})

    (result,) = tool_results(model)[1:]
    assert result.status == "error"
    assert "the browser did not answer within 0.05 s" in result.text
    assert late is Outcome.EXPIRED and request.data["skill_name"] == skill
    assert browser.registry.metrics().expired == 1 and done(events).text == ""


async def test_without_a_registry_the_tool_says_the_browser_cannot_be_reached() -> None:
    browser = Browser()
    model = FakeToolChatModel(
        script=[load("mermaid-diagram"), call("render_mermaid", code=GOOD), say("")]
    )

    await finished(browser.start(model, [builtin_spec("mermaid-diagram")], pending=False))

    (result,) = tool_results(model)[1:]
    assert result.status == "error"
    assert "the browser cannot be reached" in result.text
    assert "without a pending-request registry" in result.text
    assert browser.channel.messages == []
