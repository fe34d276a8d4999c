"""Running the `skillhive` CLI in tests: in process (`invoke`, `ok`), on a pseudo-terminal
(`Terminal`), against a live gateway (`Server`), and the one-error-line check."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner, Result

from backend.cli import app as cli


def assert_one_error_line(result: Result, *needles: str, exit_code: int = 1) -> str:
    """That exit status (1 unless told), no traceback, one `error:` line holding every needle."""
    assert result.exit_code == exit_code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


runner = CliRunner()


def invoke(*args: str, input: str | None = None) -> Result:
    return runner.invoke(cli, list(args), input=input)


def ok(*args: str, input: str | None = None) -> str:
    """Run a command that must succeed; its stdout."""
    result = invoke(*args, input=input)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


@dataclass
class Server:
    url: str
    token: str

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a CLI subprocess talking to this server."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLHIVE_")}
        return {**env, "SKILLHIVE_URL": self.url, "SKILLHIVE_TOKEN": self.token, **extra}


class Terminal:
    """A CLI process on a pseudo-terminal that it has as its controlling terminal, so the
    line discipline turns a typed Ctrl-C into SIGINT as in a real shell."""

    def __init__(
        self, args: list[str], env: dict[str, str], *, sigint_ignored: bool = False
    ) -> None:
        """`sigint_ignored`: started as a background job of a script is, SIGINT ignored."""
        self.master, slave = os.openpty()
        # A typed Ctrl-C makes the line discipline discard output not read yet (the CLI's
        # "> " or "bye" written just before a press): NOFLSH keeps it, so reads see it all.
        attrs = termios.tcgetattr(slave)
        attrs[3] |= termios.NOFLSH
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        skillhive = str(Path(sys.executable).parent / "skillhive")
        ignoring = ["sh", "-c", 'trap "" INT; exec "$@"', "sh"] if sigint_ignored else []
        self.process = subprocess.Popen(
            [*ignoring, "setsid", "-c", skillhive, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
        )
        # Held open until `close`: when a pty's last slave closes, Linux hangs it up and may
        # drop what the process wrote just before it exited (a busy machine lost a final
        # "bye" that way). With it open, reads see all output, and the process's exit tells
        # when no more will come.
        self._slave = slave
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def read_until(self, needle: str, *, deadline_s: float = 60) -> str:
        """Everything read so far once `needle` appears after the previous mark."""
        assert self._wait_for(needle, deadline_s), f"{needle!r} never appeared in:\n{self.seen}"
        found, self.seen = self.seen, self.seen[self.seen.index(needle) + len(needle) :]
        return found

    def interrupt_at_prompt(self, until: str, *, tries: int = 10) -> None:
        """Ctrl-C at the `> ` prompt until `until` shows.

        Python's input() loses a SIGINT that lands after the prompt is written but before the
        read(2) starts (the handler only sets a flag; nothing interrupts the read). A person
        cannot type inside that window; a test on a busy machine can, so it presses again. A
        second press while the first is pending still gives one KeyboardInterrupt."""
        for _ in range(tries):
            self.type("\x03")
            if self._wait_for(until, 3.0):
                self.read_until(until)
                return
        raise AssertionError(f"Ctrl-C at the prompt had no effect; output:\n{self.seen}")

    def _wait_for(self, needle: str, deadline_s: float) -> bool:
        end = time.monotonic() + deadline_s
        while needle not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                return False
            exited = self.process.poll() is not None  # before the read: its output is in
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                self.seen += os.read(self.master, 4096).decode(errors="replace")
            elif exited:  # gone, and nothing more to read
                return False
        return True

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        os.close(self.master)
        os.close(self._slave)
