"""Ctrl-C at the interactive chat's prompt, press by press: a press is an exception only while
the prompt waits for input; one that lands while a note prints is counted as the next press."""

from __future__ import annotations

import builtins
import io
import signal

import pytest

from backend.client.chat import Printer, Quit, _interactive, _PromptInterrupts


def press() -> None:
    """What a SIGINT does: Python runs the installed handler."""
    handler = signal.getsignal(signal.SIGINT)
    assert callable(handler)
    handler(signal.SIGINT, None)


class PressingStderr(io.StringIO):
    """stderr on which a Ctrl-C lands while the first line is being written."""

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.getvalue().count("\n") >= 2 and not getattr(self, "pressed", False):
            self.pressed = True
            press()
        return written


def test_a_second_press_while_the_first_note_prints_quits_and_raises_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prompts: list[str] = []

    def at_the_prompt(prompt: str) -> str:
        prompts.append(prompt)
        press()  # the first Ctrl-C, while input() waits
        raise AssertionError("the handler raises")

    stderr = PressingStderr()
    monkeypatch.setattr(builtins, "input", at_the_prompt)
    monkeypatch.setattr("sys.stderr", stderr)
    with pytest.raises(Quit):
        _interactive(None, "c", Printer(as_json=False))  # type: ignore[arg-type]

    assert prompts == ["> "]  # the second press never reached input()
    assert "(Ctrl-C again or Ctrl-D to quit)" in stderr.getvalue()


def test_a_press_outside_input_only_counts_and_the_next_read_raises_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    interrupts = _PromptInterrupts()
    interrupts(signal.SIGINT, None)  # not at the prompt: no exception here
    calls: list[str] = []
    monkeypatch.setattr(builtins, "input", lambda prompt: calls.append(prompt) or "typed")
    with pytest.raises(KeyboardInterrupt):
        interrupts.read("> ")
    assert calls == []
    assert interrupts.read("> ") == "typed"  # that press is spent
    assert calls == ["> "]


def test_a_press_during_input_raises_once(monkeypatch: pytest.MonkeyPatch) -> None:
    interrupts = _PromptInterrupts()

    def pressed(prompt: str) -> str:
        interrupts(signal.SIGINT, None)
        raise AssertionError("the handler raises")

    monkeypatch.setattr(builtins, "input", pressed)
    with pytest.raises(KeyboardInterrupt):
        interrupts.read("> ")
    monkeypatch.setattr(builtins, "input", lambda prompt: "next line")
    assert interrupts.read("> ") == "next line"
