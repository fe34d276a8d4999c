"""Ctrl-C at the interactive chat's prompt, press by press: a press is an exception only while
the prompt waits for input; one that lands while a note prints is counted as the next press."""

from __future__ import annotations

import builtins
import io
import signal
from collections.abc import Iterator

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


@pytest.fixture(autouse=True)
def keep_sigint() -> Iterator[None]:
    """The tests install the chat's handlers; pytest's comes back after each."""
    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


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
    try:
        with pytest.raises(Quit):
            _interactive(None, "c", Printer(as_json=False))  # type: ignore[arg-type]
    except KeyboardInterrupt:  # what it did before: raised inside the note's write
        pytest.fail("the second press escaped as KeyboardInterrupt")

    assert prompts == ["> "]  # the second press never reached input()
    assert "(Ctrl-C again or Ctrl-D to quit)" in stderr.getvalue()
    # Quitting: from here on a press changes nothing ("bye" prints undisturbed).
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_press_input_swallows_still_interrupts(monkeypatch: pytest.MonkeyPatch) -> None:
    """readline drops an exception raised in its completer; the press still counts."""
    interrupts = _PromptInterrupts()

    def completing(prompt: str) -> str:
        try:
            interrupts(signal.SIGINT, None)
        except KeyboardInterrupt:
            pass  # swallowed, as readline's completion callback does
        with pytest.raises(KeyboardInterrupt):  # and a press after it still raises
            interrupts(signal.SIGINT, None)
        return "the line typed"

    monkeypatch.setattr(builtins, "input", completing)
    with pytest.raises(KeyboardInterrupt):
        interrupts.read("> ")
    monkeypatch.setattr(builtins, "input", lambda prompt: "next")
    assert interrupts.read("> ") == "next"


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
