"""Observability overhead: `python -m bench.observability`.

Two gateway processes on loopback share one SQLite database and the instant fake model: one
with Prometheus metrics and OpenTelemetry tracing on (spans kept by the SDK's in-memory
exporter), one with both off. The chat benchmark's REST turn is timed against each in
alternating pairs (bench/_util.compare); `observed_ratio` is the median per-pair ratio
(target <= 1.1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from backend.config import Settings
from backend.db.migrate import upgrade
from bench._util import compare
from bench.chat import GHOST, free_port, user_token

METRICS_TOKEN = "bench-observability-scrape-token"
Job = Callable[[], Awaitable[None]]


@contextmanager
def gateway(settings: Settings, *, observed: bool) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "SKILLHIVE_DATABASE_URL": settings.effective_database_url,
        "SKILLHIVE_DATA_DIR": str(settings.data_dir),
        "SKILLHIVE_LOG_LEVEL": "WARNING",
        "SKILLHIVE_METRICS": "true" if observed else "false",
        "BENCH_TRACING": "1" if observed else "0",
        "SKILLHIVE_METRICS_TOKEN": METRICS_TOKEN,
    }
    args = [sys.executable, "-m", "bench._observed_gateway", str(port)]
    process = subprocess.Popen(args, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("a gateway did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(20)


async def _database(name: str) -> tuple[Settings, dict[str, str]]:
    """Each gateway its own SQLite file: no lock contention between the two sides."""
    workdir = Path(tempfile.mkdtemp(prefix=f"skillhive-bench-observability-{name}-"))
    settings = Settings(data_dir=workdir, database_url=f"sqlite+aiosqlite:///{workdir}/obs.db")
    upgrade(settings.effective_database_url)
    return settings, {"Authorization": f"Bearer {await user_token(settings)}"}


async def run(pairs: int) -> None:
    on_settings, on_headers = await _database("on")
    off_settings, off_headers = await _database("off")
    with (
        gateway(on_settings, observed=True) as on_url,
        gateway(off_settings, observed=False) as off_url,
    ):
        async with (
            httpx.AsyncClient(base_url=on_url, headers=on_headers, timeout=30) as on,
            httpx.AsyncClient(base_url=off_url, headers=off_headers, timeout=30) as off,
        ):
            for client in (on, off):
                (await client.post("/api/v1/namespaces/dev/ghosts", json=GHOST)).raise_for_status()

            async def conversations(client: httpx.AsyncClient) -> Iterator[str]:
                ids = []
                for _ in range(pairs + 25):
                    body = {"ghost": "dev/bench"}
                    created = await client.post("/api/v1/conversations", json=body)
                    created.raise_for_status()
                    ids.append(str(created.json()["id"]))
                return iter(ids)

            failures = 0

            def turn(
                client: httpx.AsyncClient, ids: Iterator[str]
            ) -> Callable[[], Awaitable[None]]:
                async def one() -> None:
                    nonlocal failures
                    answer = await client.post(
                        f"/api/v1/conversations/{next(ids)}/messages", json={"content": "hello"}
                    )
                    if answer.status_code != 200 or answer.json()["status"] != "ok":
                        failures += 1

                return one

            on_ids, off_ids = await conversations(on), await conversations(off)
            result = await compare(turn(on, on_ids), turn(off, off_ids), pairs=pairs)
            errors = failures
            scrape = {"Authorization": f"Bearer {METRICS_TOKEN}"}
            text = (await on.get("/metrics", headers=scrape)).text
            recorded = [line for line in text.splitlines() if line.startswith("skillhive_turns_")]
            print(f"observed gateway recorded: {', '.join(recorded)}")
    print(
        f"REST turn observed {result.candidate_ms:.2f} ms vs unobserved {result.baseline_ms:.2f} ms"
    )
    print(f"observed_ratio: {result.median_ratio:.2f} (target <= 1.1)")
    print(f"RESULT observability observed_ratio={result.median_ratio:.2f} errors={errors}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.pairs))


if __name__ == "__main__":
    main()
