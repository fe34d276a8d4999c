"""A turn survives a lost connection; hostile strings stay text; Stop cancels."""

from __future__ import annotations

import re
import threading
import time

import pytest
from playwright.sync_api import expect

from tests.support import zips
from tests.support.console import Console, Gateway, scripted_conversation, send
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)]


def wait_for_answer(gateway: Gateway, cid: str, deadline_s: float = 30) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        items = gateway.api("GET", f"/conversations/{cid}/messages").json()["items"]
        if items and items[-1]["role"] == "assistant":
            return
        time.sleep(0.1)
    raise AssertionError("the turn was not stored in time")


@pytest.mark.parametrize("ends_while_away", [False, True], ids=["resumes", "ended-while-away"])
def test_a_reconnect_during_a_turn_resumes_it(
    console: Console,
    gateway: Gateway,
    openai_server: FakeOpenAIServer,
    ends_while_away: bool,
) -> None:
    cid = scripted_conversation(gateway, openai_server, "mermaid-diagram")
    console.sign_in(gateway.token)
    console.open(f"/chat/{cid}")
    gate = threading.Event()
    answer = "Streaming while the connection drops, and still all here."
    openai_server.script(Reply(text=answer, gate=gate, chunk_chars=8))
    try:
        send(console, "tell me something")
        running = console.page.locator(".message.assistant.running")
        expect(running.locator(".text")).to_have_text(answer[:8])  # held after the first piece
        console.page.context.set_offline(True)
        expect(console.page.locator("body")).to_have_attribute("data-socket", "disconnected")
        if ends_while_away:
            gate.set()
            wait_for_answer(gateway, cid)
        console.page.context.set_offline(False)
        expect(console.page.locator("body")).to_have_attribute("data-socket", "connected")
        if not ends_while_away:
            # back in the room, the turn in progress is still shown as running, then continues
            expect(running).to_have_count(1)
            expect(running.locator(".text")).to_have_text(answer[:8])
            expect(console.page.get_by_role("button", name="Stop")).to_be_enabled()
            gate.set()
    finally:
        gate.set()
    done = console.page.locator(".message.assistant.status-ok")
    expect(done.locator(".text")).to_have_text(answer)
    expect(console.page.locator(".message.assistant")).to_have_count(1)
    expect(console.page.get_by_role("button", name="Send")).to_be_enabled()
    assert console.errors == []


def test_stop_cancels_the_running_turn(
    console: Console, gateway: Gateway, openai_server: FakeOpenAIServer
) -> None:
    cid = scripted_conversation(gateway, openai_server, "mermaid-diagram")
    console.sign_in(gateway.token)
    console.open(f"/chat/{cid}")
    gate = threading.Event()
    openai_server.script(Reply(text="This answer never finishes streaming.", gate=gate))
    try:
        send(console, "go on")
        expect(console.page.locator(".message.assistant.running .text")).to_have_text("This")
        console.page.get_by_role("button", name="Stop").click()
        cancelled = console.page.locator(".message.assistant.status-cancelled")
        expect(cancelled.locator(".error")).to_have_text(re.compile(r"^cancelled: "))
        expect(cancelled).not_to_contain_text("null")
    finally:
        gate.set()
    stored = gateway.api("GET", f"/conversations/{cid}/messages").json()["items"]
    assert stored[-1]["status"] == "cancelled"
    expect(console.page.get_by_role("button", name="Send")).to_be_enabled()
    assert console.errors == []


PAYLOAD = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=1</script>'


def test_hostile_strings_stay_inert_everywhere(
    console: Console, gateway: Gateway, openai_server: FakeOpenAIServer
) -> None:
    description = PAYLOAD.replace('"', "'")
    hostile = zips.skill(
        "hostile-notes",
        description=f'"{description}"',
        files={"notes.md": f"# Notes\n\n{PAYLOAD}\n\n[click](javascript:window.__pwned=1)\n"},
    ).replace(b"Do the thing.", PAYLOAD.encode())
    stored = gateway.api(
        "POST",
        "/namespaces/default/skills",
        content=hostile,
        headers={"Content-Type": "application/zip"},
    )
    assert stored.status_code == 201, stored.text
    cid = scripted_conversation(gateway, openai_server, "mermaid-diagram")
    titled = gateway.api(
        "POST", "/conversations", json={"ghost": "default/artist", "title": PAYLOAD}
    )
    assert titled.status_code == 201, titled.text

    console.sign_in(gateway.token)
    console.open("/skills")
    expect(console.page.locator(".skills p").first).to_have_text(description)
    # a skill named with markup is refused; the refusal shows the name as text
    named = zips.build({"SKILL.md": zips.skill_md(f'"{description}"')}, folder="evil")
    console.page.locator(".drop input[type=file]").set_input_files(
        files=[{"name": "evil.zip", "mimeType": "application/zip", "buffer": named}]
    )
    expect(console.page.locator(".report .problems")).to_be_visible()
    console.open("/skills/default/hostile-notes")
    expect(console.page.locator(".viewer .markdown")).to_be_visible()
    console.page.get_by_role("button", name="notes.md").click()
    expect(console.page.locator(".viewer h1")).to_have_text("Notes")

    console.open(f"/chat/{cid}")
    openai_server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "mermaid-diagram"})]),
        Reply(
            tool_calls=[ToolCall("render_mermaid", {"code": f'graph TD; A["{description}"]-->B'})]
        ),
        Reply(text=f"Model says {PAYLOAD} and [a link](javascript:window.__pwned=1)"),
    )
    send(console, PAYLOAD)
    done = console.page.locator(".message.assistant.status-ok")
    expect(done.locator(".text")).to_contain_text("Model says")
    expect(done.locator("figure.diagram")).to_have_attribute("data-outcome", "resolved")
    expect(console.page.locator(".message.user .text")).to_have_text(PAYLOAD)
    expect(console.page.locator(".conversations")).to_contain_text(PAYLOAD)

    found = console.injected()
    assert found["pwned"] is False
    # Chromium reports a handler attribute as refused by the CSP as soon as any parser meets it,
    # DOMPurify's inert one included (ours, and the copy bundled in Mermaid, which sanitizes
    # labels): every report must come from such a parse, none from the console's own code.
    sanitizers = ("/console/vendor/purify.es.mjs ", "/console/vendor/mermaid.min.js ")
    outside = [v for v in found["violations"] if not any(s in v for s in sanitizers)]
    assert outside == []
    assert all(v.startswith("script-src-attr ") for v in found["violations"])
    assert found["handlers"] == 0  # no element anywhere carries an on* attribute
    assert [s for s in found["scripts"] if "/console/" not in s] == []
    assert console.page.locator("a[href^='javascript']").count() == 0
    assert console.errors == []
