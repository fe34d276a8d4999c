"""Real MCP servers for the tests: installed once per machine under `.cache/`, pinned.

`mcp-server-time` needs `mcp>=2.3`, which this project must not have (`mcp<2`), so it lives in
its own venv. `@modelcontextprotocol/server-everything` is an npm package. Both installs are
guarded by a file lock (parallel test runs) and a stamp holding the pins (a pin change
reinstalls).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from chat_shell.tools.mcp import McpServerConfig, parse_mcp_server
from tests.support.cluster import free_port
from tests.support.installs import CACHE, install_once, npm_install, run

FIXTURE_SERVER = Path(__file__).with_name("mcp_fixture_server.py")

TIME_PINS = ["mcp-server-time==2026.10.19", "mcp==2.3.0"]
TIME_VENV = CACHE / "mcp-venv"
EVERYTHING_PIN = "@modelcontextprotocol/server-everything@2026.8.31"
NPM_PREFIX = CACHE / "npm"
EVERYTHING_JS = NPM_PREFIX / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def install_time_server() -> Path:
    """The `mcp-server-time` executable, in its own venv."""

    def install() -> None:
        run(sys.executable, "-m", "venv", TIME_VENV)
        run(TIME_VENV / "bin/python", "-m", "pip", "install", "-q", *TIME_PINS)

    install_once(TIME_VENV, TIME_PINS, install)
    return TIME_VENV / "bin/mcp-server-time"


def install_everything_server() -> Path:
    """The entry script of `@modelcontextprotocol/server-everything` (run it with node)."""

    npm_install(NPM_PREFIX, EVERYTHING_PIN)
    return EVERYTHING_JS


def wait_until(condition: Callable[[], bool], *, timeout_s: float = 30.0, what: str) -> None:
    """Poll `condition` until it holds; fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def http_server(cmd: list[str], port: int, *, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run a server on `port` until the block ends; yields the base URL once it accepts."""
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, "PORT": str(port), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(
            lambda: proc.poll() is not None or _accepts(port), what=f"{cmd[:2]} on port {port}"
        )
        assert proc.poll() is None, f"{cmd} exited with {proc.returncode}"
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def child_processes(marker: str) -> list[int]:
    """Live (not zombie) child processes of this test process whose command line has `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # exited meanwhile
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == os.getpid() and state != "Z" and marker in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture(scope="session")
def time_server() -> McpServerConfig:
    """`mcp-server-time` over stdio, trusted (as in server configuration)."""
    exe = install_time_server()
    return parse_mcp_server({"command": str(exe), "args": ["--local-timezone=UTC"]}, trusted=True)


@pytest.fixture(scope="session")
def everything_js() -> str:
    return str(install_everything_server())


@pytest.fixture(scope="session")
def everything_http(everything_js: str) -> Iterator[McpServerConfig]:
    cmd = ["node", everything_js, "streamableHttp"]
    with http_server(cmd, free_port()) as base:
        yield parse_mcp_server({"type": "streamableHttp", "url": f"{base}/mcp"}, trusted=False)


@pytest.fixture(scope="session")
def fixture_http() -> Iterator[McpServerConfig]:
    """The fixture server over streamable HTTP (its `get_header` tool sees request headers)."""
    port = free_port()
    cmd = [sys.executable, str(FIXTURE_SERVER), "http", str(port)]
    with http_server(cmd, port) as base:
        yield parse_mcp_server({"type": "http", "url": f"{base}/mcp"}, trusted=False)
