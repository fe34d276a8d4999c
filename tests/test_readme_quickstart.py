"""README.md's quick start, run as written against a real `skillhive serve`, so the README cannot
drift from the product: the bash blocks between the quickstart markers run in one shell."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cluster import free_port

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- quickstart:begin", "<!-- quickstart:end -->"


def quickstart_blocks(readme: str) -> list[str]:
    start = readme.index(BEGIN)
    section = readme[start : readme.index(END, start)]
    return re.findall(r"^```bash\n(.*?)^```$", section, re.M | re.S)


def test_the_quick_start_starts_the_server_with_scripts_serve() -> None:
    readme = (ROOT / "README.md").read_text()
    before = readme[readme.index("## Quick start") : readme.index(BEGIN)]
    assert re.search(r"^```bash\n\./scripts/serve\b", before, re.M)
    serve = (ROOT / "scripts" / "serve").read_text()
    assert ".venv/bin/skillhive migrate" in serve and "exec .venv/bin/skillhive serve" in serve
    assert len(quickstart_blocks(readme)) >= 4


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """What `./scripts/serve` does after installing: migrate, then serve (temp data dir, free
    loopback port). Yields the environment the second terminal would have."""
    workdir = tmp_path_factory.mktemp("quickstart")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLHIVE_")}
    env.update(SKILLHIVE_DATA_DIR=str(workdir / "data"), SKILLHIVE_PORT=str(free_port()))
    cli = [sys.executable, "-m", "backend.cli"]
    subprocess.run([*cli, "migrate"], env=env, cwd=ROOT, check=True, capture_output=True)
    log = workdir / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen([*cli, "serve"], env=env, cwd=ROOT, stdout=out, stderr=out)
    try:
        url = f"http://127.0.0.1:{env['SKILLHIVE_PORT']}/readyz"
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server not ready:\n" + log.read_text()
            time.sleep(0.1)
        yield env
    finally:
        process.terminate()
        process.wait(30)


def run_quickstart(env: dict[str, str], tmp_path: Path) -> str:
    """The blocks in one bash, in a folder whose `.venv` is this interpreter's environment."""
    (tmp_path / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    script = "\n".join(quickstart_blocks((ROOT / "README.md").read_text()))
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.timeout(300)
def test_the_quick_start_runs_as_written(server: dict[str, str], tmp_path: Path) -> None:
    out = run_quickstart(server, tmp_path)
    assert '"name":"admin","role":"admin"' in out  # the token works
    assert "created default/haiku-writer (v1)" in out  # the skill push
    assert '"metadata":{"name":"helper","namespace":"default"' in out  # the Ghost
    # The JSON answer: the offline model loaded the skill the message points at.
    assert '"args":{"skill_name":"haiku-writer"}' in out
    assert 'Active skills: haiku-writer. You said: \\"Write a haiku about the sea\\"' in out
    # The SSE turn: its events in order (repeats folded), the skill it loaded, the end.
    events = re.findall(r"^event: (\w+)$", out, re.M)
    folded = [e for i, e in enumerate(events) if i == 0 or events[i - 1] != e]
    assert folded == [
        "start",
        "usage",
        "tool_start",
        "skill_loaded",
        "tool_end",
        "token",
        "usage",
        "done",
    ]
    loaded = re.search(r"^event: skill_loaded\ndata: (.*)$", out, re.M)
    assert loaded is not None and '"name":"skillhive-skill-authoring"' in loaded.group(1)
