"""Real processes for scale-out tests: gateways (uvicorn) and `skillhive worker`s, sharing one
database and one Redis, each a separate OS process started the way production starts them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    url: str | None = None

    def kill(self) -> None:
        """SIGKILL: no clean-up code runs, as when a machine or container dies."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self) -> None:
        """SIGTERM, as an orchestrator stops it: it drains and exits (SIGKILL after 20 s)."""
        if self.popen.poll() is None:
            self.popen.terminate()
            self.reap()

    def reap(self) -> None:
        """Wait for a terminated process to exit; SIGKILL it if it has not in 20 s."""
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class Cluster:
    workdir: Path
    env: dict[str, str]
    processes: list[Process] = field(default_factory=list)

    def spawn(self, name: str, args: list[str], url: str | None = None) -> Process:
        """`python -m <args>` in the cluster's environment, logging to `<workdir>/<name>-N.log`."""
        name = f"{name}-{len(self.processes)}"  # unique: its log file is named after it
        log = self.workdir / f"{name}.log"
        handle = log.open("wb")
        popen = subprocess.Popen(
            [sys.executable, "-m", *args],
            env=self.env,
            cwd=REPO,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        handle.close()
        process = Process(name, popen, log, url)
        self.processes.append(process)
        return process

    def spawn_gateway(self, module: list[str]) -> Process:
        """A gateway module that takes its port as the last argument."""
        port = free_port()
        return self.spawn("gateway", [*module, str(port)], f"http://127.0.0.1:{port}")

    def gateway(self) -> Process:
        return self.spawn_gateway(["backend.cli", "serve", "--host", "127.0.0.1", "--port"])

    def worker(self) -> Process:
        return self.spawn("worker", ["backend.cli", "worker"])

    def wait_ready(self, process: Process, *, deadline_s: float = 60) -> None:
        deadline = time.monotonic() + deadline_s
        # Workers log "worker <id> ready (concurrency N)"; gateways answer /readyz.
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                raise RuntimeError(f"{process.name} exited:\n{process.output()}")
            if process.url is None and " ready (concurrency " in process.output():
                return
            if process.url is not None:
                try:
                    if httpx.get(process.url + "/readyz", timeout=2).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"{process.name} not ready:\n{process.output()}")

    def stop_all(self) -> None:
        """Every process is told to stop before any is waited for: they drain side by side."""
        running = [p for p in self.processes if p.popen.poll() is None]
        for process in running:
            process.popen.terminate()
        for process in running:
            process.reap()


def cluster_env(database_url: str, redis_url: str, data_dir: Path, **extra: Any) -> dict[str, str]:
    """`data_dir` holds the development secrets key: share it with any in-process app."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLHIVE_")}
    env.update(
        {
            "SKILLHIVE_DATABASE_URL": database_url,
            "SKILLHIVE_REDIS_URL": redis_url,
            "SKILLHIVE_DATA_DIR": str(data_dir),
            "SKILLHIVE_LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env
