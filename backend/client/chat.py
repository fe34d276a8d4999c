"""`skillhive chat NS/GHOST`: a terminal chat over REST SSE.

Tokens print as they stream; tool calls and skill loads are compact lines on stderr. Ctrl-C
cancels the running turn through the cancel API, a second Ctrl-C quits (status 130). Tools
that need a browser (frontend skills) cannot be answered here: the request is printed and the
turn cancelled instead of waiting. Slash commands complete from the Ghost's `/commands` route
when the server has one.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from backend.client.api import Api, connect, ghosts_path
from backend.client.errors import ApiError, CliError, ExitCode
from backend.client.stream import TERMINAL, Event, Turn

# Tools of the built-in frontend skills: they wait for a browser's `skill:response`.
BROWSER_TOOLS = frozenset({"render_mermaid", "ask_user"})
QUIT_STATUS = 130  # what a shell reports for a process ended by SIGINT


class Quit(Exception):
    """The user pressed Ctrl-C twice."""


class Printer:
    def __init__(self, *, as_json: bool) -> None:
        self.as_json = as_json
        self._mid_line = False

    def _out(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def note(self, text: str) -> None:
        if self.as_json:
            return
        if self._mid_line:
            self._out("\n")
            self._mid_line = False
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def end_line(self) -> None:
        if self._mid_line:
            self._out("\n")
            self._mid_line = False

    def show(self, event: Event) -> None:
        kind = event.get("type")
        if self.as_json:
            self._out(json.dumps(event, ensure_ascii=False) + "\n")
            return
        if kind == "token":
            delta = str(event.get("delta", ""))
            if delta:
                self._out(delta)
                self._mid_line = not delta.endswith("\n")
        elif kind == "tool_start" and event.get("name") != "load_skill":
            args = json.dumps(event.get("args") or {}, ensure_ascii=False)
            self.note(f"· {event.get('name')}({args if len(args) < 120 else args[:117] + '...'})")
        elif kind == "tool_end" and event.get("name") != "load_skill":
            if event.get("error"):
                self.note(f"· {event.get('name')} failed: {event['error']}")
            else:
                self.note(f"· {event.get('name')} done ({event.get('duration_ms', '?')} ms)")
        elif kind == "skill_loaded":
            self.note(f"· skill {event.get('name')} loaded")
        elif kind in ("skill_error", "mcp_error"):
            what = event.get("skill") or event.get("server")
            self.note(f"! {what}: {event.get('code')}: {event.get('message')}")
        elif kind == "done":
            self.end_line()
        elif kind == "error":
            self.end_line()
            if event.get("code") == "cancelled":
                self.note("turn cancelled")
            else:
                self.note(f"error: turn failed: {event.get('code')}: {event.get('message')}")


def _cancel(api: Api, conversation: str) -> bool:
    answer = api.json("POST", f"/api/v1/conversations/{conversation}/cancel")
    return bool(answer.get("cancelled"))


class _Interrupts:
    """Counts SIGINTs instead of raising KeyboardInterrupt at an arbitrary point (inside a
    queue's lock, an HTTP call): the turn loop looks at the count between waits."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, frame: object) -> None:
        self.count += 1


@contextmanager
def _handling_sigint(handler: Callable[[int, object], None]) -> Iterator[None]:
    """`handler` for SIGINT in the block. Leaving it with Quit ignores SIGINT from then on:
    the chat is quitting, a further press changes nothing (the previous handler would raise
    KeyboardInterrupt while "bye" prints)."""
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    except Quit:
        previous = signal.SIG_IGN
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def run_turn(api: Api, conversation: str, content: str, printer: Printer) -> Event:
    """Stream one turn to the terminal; its terminal event (`done` or `error`)."""
    cancelling = retry_cancel = False
    seen_interrupts = 0
    interrupts = _Interrupts()
    with _handling_sigint(interrupts):
        turn = Turn(api.config, conversation, content)  # a press from here on cancels it
        while True:
            if interrupts.count > seen_interrupts:
                seen_interrupts = interrupts.count
                if cancelling:
                    raise Quit
                cancelling = True
                printer.note("^C cancelling the turn (Ctrl-C again quits)")
                retry_cancel = not _cancel(api, conversation)
            item = turn.next(timeout=0.1)
            if item is None:
                continue
            if isinstance(item, CliError):
                raise item
            printer.show(item)
            if item.get("type") in TERMINAL:
                return item
            if retry_cancel:  # the first request came before the turn was running
                retry_cancel = not _cancel(api, conversation)
            if item.get("type") == "tool_start" and item.get("name") in BROWSER_TOOLS:
                printer.note(
                    f"! {item['name']} needs a browser to answer, and this is a terminal; "
                    f"the request: {json.dumps(item.get('args') or {}, ensure_ascii=False)}"
                )
                printer.note("  (open the conversation in a browser client to use it)")
                if not cancelling:
                    cancelling = True
                    retry_cancel = not _cancel(api, conversation)


def _split_ghost(ghost: str, namespace: str) -> tuple[str, str]:
    if "/" in ghost:
        ns, _, name = ghost.partition("/")
        return ns, name
    return namespace, ghost


def slash_commands(api: Api, namespace: str, name: str) -> list[str]:
    """Slash commands the Ghost offers, if the server has the route (else none, silently)."""
    try:
        answer = api.request("GET", f"{ghosts_path(namespace)}/{name}/commands", ok=(404, 405))
    except ApiError:
        return []
    if answer.status_code != 200:
        return []
    try:
        body: Any = answer.json()
    except ValueError:
        return []
    items = body.get("items", []) if isinstance(body, dict) else body
    names = [i.get("name") if isinstance(i, dict) else i for i in items or []]
    return sorted({f"/{str(n).lstrip('/')}" for n in names if n})


def completer(commands: list[str]) -> Callable[[str, int], str | None]:
    """readline's completer: the `state`-th slash command starting with `text`."""

    def complete(text: str, state: int) -> str | None:
        found = [c for c in commands if c.startswith(text)] if text.startswith("/") else []
        return found[state] if state < len(found) else None

    return complete


def _offer_completion(commands: list[str]) -> None:
    if not commands:
        return
    try:
        import readline
    except ImportError:  # pragma: no cover - no readline on this platform
        return
    readline.set_completer(completer(commands))
    readline.set_completer_delims(" \t\n")
    readline.parse_and_bind("tab: complete")


class _PromptInterrupts:
    """SIGINT at the prompt: raises KeyboardInterrupt only while `read` waits in input(), and
    counts a press that lands anywhere else (while a note prints), so a quick second Ctrl-C is
    the second press, never an exception inside a write."""

    def __init__(self) -> None:
        self.count = 0
        self._seen = 0
        self._armed = False

    def __call__(self, signum: int, frame: object) -> None:
        self.count += 1
        if self._armed:  # stays armed: input() may swallow this one (a readline completer)
            raise KeyboardInterrupt

    def read(self, prompt: str) -> str:
        """input(prompt); KeyboardInterrupt for a press during it or since the last read."""
        if self.count > self._seen:
            self._seen = self.count
            raise KeyboardInterrupt
        self._armed = True
        try:
            line = input(prompt)
        finally:
            self._armed = False
            swallowed, self._seen = self.count > self._seen, self.count
        if swallowed:  # a press input() returned through, or one just after it
            raise KeyboardInterrupt
        return line


def _interactive(api: Api, conversation: str, printer: Printer) -> None:
    # Installed also in a process started with SIGINT ignored (a background job of a script
    # passes that on): the chat says what Ctrl-C does.
    interrupts = _PromptInterrupts()
    with _handling_sigint(interrupts):
        interrupted = False
        while True:
            try:
                line = interrupts.read("> ")
            except EOFError:
                printer.end_line()
                return
            except KeyboardInterrupt:
                if interrupted:
                    raise Quit from None
                interrupted = True
                printer.note("\n(Ctrl-C again or Ctrl-D to quit)")
                continue
            interrupted = False
            if line.strip():
                try:
                    run_turn(api, conversation, line, printer)
                except ApiError as exc:  # e.g. turn_in_progress: the chat goes on
                    printer.note(f"error: {exc.message}")


def chat(
    ghost: Annotated[str, typer.Argument(help="NS/GHOST (or GHOST in the default namespace).")],
    conversation: Annotated[
        str | None, typer.Option("--conversation", "-c", help="Continue this conversation.")
    ] = None,
    message: Annotated[
        str | None, typer.Option("--message", "-m", help="Send one message, print the answer.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the events as JSON lines.")
    ] = False,
) -> None:
    """Chat with a Ghost; `-m` sends one message (exit status 1 if the turn fails)."""
    printer = Printer(as_json=as_json)
    with connect() as api:
        namespace, name = _split_ghost(ghost, api.config.namespace)
        if conversation is None:
            body = {"ghost": f"{namespace}/{name}"}
            created = api.json("POST", "/api/v1/conversations", json=body)
            conversation = str(created["id"])
        else:
            api.json("GET", f"/api/v1/conversations/{conversation}")  # 404 before any prompt
        try:
            if message is not None:
                printer.note(f"conversation {conversation}")
                final = run_turn(api, conversation, message, printer)
                if final.get("type") != "done":
                    raise typer.Exit(ExitCode.ERROR)
                return
            _offer_completion(slash_commands(api, namespace, name))
            printer.note(
                f"chatting with {namespace}/{name} (conversation {conversation}); "
                "Ctrl-C cancels a turn, twice quits; Ctrl-D quits"
            )
            _interactive(api, conversation, printer)
        except Quit:
            printer.note("bye")
            raise typer.Exit(QUIT_STATUS) from None
