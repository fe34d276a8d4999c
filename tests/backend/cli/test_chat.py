"""`skillhive chat` against a live gateway: `-m` and `--json` for scripts, and the interactive
chat through a real pseudo-terminal (tokens as they stream, Ctrl-C cancels, twice quits)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.support.cli import Server, Terminal, assert_one_error_line, invoke, ok
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall

HAIKU = """\
---
name: haiku-writer
description: Writes a haiku about any topic.
---
Answer with one haiku.
"""


def offline_ghost(tmp_path: Path) -> None:
    (tmp_path / "haiku-writer").mkdir()
    (tmp_path / "haiku-writer" / "SKILL.md").write_text(HAIKU)
    (tmp_path / "ghost.yaml").write_text(
        "kind: Ghost\nmetadata: {name: helper, namespace: dev}\n"
        "spec: {systemPrompt: You help., model: {name: offline}, skills: [haiku-writer]}\n"
    )
    ok("apply", "-f", str(tmp_path), "-n", "dev")


def scripted_ghost(server: Server, openai_server: FakeOpenAIServer, **spec: object) -> None:
    """Ghost `dev/scripted` on the scripted model server (its key is the user's secret)."""
    headers = {"Authorization": f"Bearer {server.token}"}
    put = httpx.put(
        f"{server.url}/api/v1/secrets/MODEL_KEY", json={"value": "sk-test"}, headers=headers
    )
    assert put.status_code in (201, 204), put.text
    model = {"name": "scripted", "baseUrl": openai_server.base_url, "apiKeySecret": "MODEL_KEY"}
    document = {
        "kind": "Ghost",
        "metadata": {"name": "scripted", "namespace": "dev"},
        "spec": {"systemPrompt": "You help.", "model": model, **spec},
    }
    ok("apply", "-f", "-", input=json.dumps(document))


def test_m_prints_the_answer_on_stdout_and_the_skill_load_on_stderr(
    server: Server, tmp_path: Path
) -> None:
    offline_ghost(tmp_path)
    result = invoke("chat", "dev/helper", "-m", "Write a haiku about the sea")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("This is Skillhive's offline model")
    assert "Active skills: haiku-writer." in result.stdout
    assert "· skill haiku-writer loaded" in result.stderr
    assert "· skill" not in result.stdout
    conversation = result.stderr.splitlines()[0].removeprefix("conversation ")
    follow_up = invoke("chat", "dev/helper", "--conversation", conversation, "-m", "And again?")
    assert follow_up.exit_code == 0, follow_up.output
    listed = ok("get", "conversations", "-o", "json")
    assert [c["id"] for c in json.loads(listed)] == [conversation]


def test_json_prints_every_event_as_one_json_line(server: Server, tmp_path: Path) -> None:
    offline_ghost(tmp_path)
    result = invoke("chat", "dev/helper", "-m", "Write a haiku about the sea", "--json")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "start" and types[-1] == "done"
    assert {"tool_start", "skill_loaded", "tool_end", "token"} <= set(types)
    assert result.stderr == ""


def test_m_exit_codes_for_a_failed_turn_and_unknown_things(
    server: Server, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    scripted_ghost(server, openai_server)
    openai_server.script(Reply(status=500, text="upstream broke"))
    failed = invoke("chat", "dev/scripted", "-m", "hi")
    assert failed.exit_code == 1, failed.output
    assert "error: turn failed: " in failed.stderr
    missing = invoke("chat", "dev/nobody", "-m", "hi")
    assert_one_error_line(missing, "404 ghost_not_found", exit_code=3)
    unknown = invoke("chat", "dev/scripted", "--conversation", "nope", "-m", "hi")
    assert_one_error_line(unknown, "404 conversation_not_found", exit_code=3)


def test_a_tool_that_needs_a_browser_prints_the_request_and_does_not_hang(
    server: Server, openai_server: FakeOpenAIServer
) -> None:
    scripted_ghost(server, openai_server, skills=["mermaid-diagram"])
    openai_server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "mermaid-diagram"})]),
        Reply(tool_calls=[ToolCall("render_mermaid", {"code": "graph TD; A-->B"})]),
    )
    result = invoke("chat", "dev/scripted", "-m", "draw it")
    assert result.exit_code == 1, result.output
    assert "render_mermaid needs a browser" in result.stderr
    assert '"code": "graph TD; A-->B"' in result.stderr
    assert "turn cancelled" in result.stderr


def test_ctrl_c_at_the_prompt_works_when_the_chat_was_started_with_sigint_ignored(
    server: Server, openai_server: FakeOpenAIServer, terminal: Any, tmp_path: Path
) -> None:
    """A background job of a script starts with SIGINT ignored; the chat's Ctrl-C still quits."""
    scripted_ghost(server, openai_server)
    env = server.env(XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    term: Terminal = terminal(["chat", "dev/scripted"], env, sigint_ignored=True)
    term.read_until("> ")
    term.interrupt_at_prompt("Ctrl-C again or Ctrl-D to quit")
    term.interrupt_at_prompt("bye")
    assert term.process.wait(30) == 130


def test_interactive_chat_streams_tokens_cancels_on_ctrl_c_and_quits_on_a_second(
    server: Server, openai_server: FakeOpenAIServer, terminal: Any, tmp_path: Path
) -> None:
    scripted_ghost(server, openai_server)
    gate = threading.Event()  # holds the first answer open after its first token
    openai_server.script(
        Reply(text="Streaming tokens arrive while the answer is held", gate=gate),
        Reply(text="A second answer."),
    )
    env = server.env(XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    term: Terminal = terminal(["chat", "dev/scripted"], env)
    try:
        banner = term.read_until("> ")
        conversation = banner.split("(conversation ")[1].split(")")[0]
        term.type("hello\r")
        shown = term.read_until("Stre")  # the first token, while the model is still held
        assert "held" not in shown
        term.type("\x03")  # Ctrl-C: cancels the running turn through the API
        term.read_until("turn cancelled")
        term.read_until("> ")
        headers = {"Authorization": f"Bearer {server.token}"}
        messages = httpx.get(
            f"{server.url}/api/v1/conversations/{conversation}/messages", headers=headers
        ).json()["items"]
        assert [(m["role"], m["status"]) for m in messages] == [
            ("user", "ok"),
            ("assistant", "cancelled"),
        ]
        term.type("again\r")
        term.read_until("A second answer.")
        term.read_until("> ")
        term.interrupt_at_prompt("Ctrl-C again or Ctrl-D to quit")
        term.interrupt_at_prompt("bye")
        assert term.process.wait(30) == 130
    finally:
        gate.set()
