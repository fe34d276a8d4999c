"""The worker's liveness file and `skillhive worker --check` (the worker's health check)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from typer.testing import CliRunner

from backend import heartbeat
from backend.cli import app
from backend.config import Settings, get_settings
from tests.support.cluster import REPO, Cluster, cluster_env, free_port

runner = CliRunner()


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SKILLHIVE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


async def test_a_beat_touches_the_file_only_while_redis_answers(
    redis_url: str, tmp_path: Path
) -> None:
    path = tmp_path / heartbeat.FILE_NAME
    dead = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_timeout=2)
    try:
        assert await heartbeat.beat(dead, path) is False
    finally:
        await dead.aclose()
    assert not path.exists()
    live = aioredis.Redis.from_url(redis_url)
    try:
        assert await heartbeat.beat(live, path) is True
    finally:
        await live.aclose()
    assert heartbeat.age_s(path) is not None


def test_check_passes_on_a_fresh_heartbeat(data_dir: Path) -> None:
    (data_dir / heartbeat.FILE_NAME).touch()
    result = runner.invoke(app, ["worker", "--check"])
    assert result.exit_code == 0, result.output
    assert "healthy" in result.output


def test_check_fails_without_a_heartbeat_file(data_dir: Path) -> None:
    result = runner.invoke(app, ["worker", "--check"])
    assert result.exit_code == 1
    assert "no worker heartbeat" in result.output


def test_check_fails_on_a_stale_heartbeat(data_dir: Path) -> None:
    path = data_dir / heartbeat.FILE_NAME
    path.touch()
    old = time.time() - heartbeat.MAX_AGE_S - 5
    os.utime(path, (old, old))
    result = runner.invoke(app, ["worker", "--check"])
    assert result.exit_code == 1
    assert "unhealthy: last worker heartbeat" in result.output
    assert runner.invoke(app, ["worker", "--check", "--max-age", "3600"]).exit_code == 0


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "backend.cli", "worker", "--check"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _until(condition: Callable[[], bool], deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met before the deadline")
        time.sleep(0.05)


@pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)
@pytest.mark.timeout(180)
def test_a_running_worker_is_healthy_and_a_stopped_one_is_not(
    settings: Settings, redis_url: str, tmp_path: Path
) -> None:
    env = cluster_env(settings.database_url or "", redis_url, settings.data_dir)
    cluster = Cluster(tmp_path, env)
    path = heartbeat.heartbeat_path(settings)
    try:
        worker = cluster.worker()
        cluster.wait_ready(worker)
        _until(path.exists, deadline_s=30)
        assert _check(env).returncode == 0
        first = path.stat().st_mtime_ns
        _until(lambda: path.exists() and path.stat().st_mtime_ns > first, heartbeat.EVERY_S * 4)
        worker.stop()  # SIGTERM: drains, stops beating, removes the file
        failed = _check(env)
        assert failed.returncode == 1 and "no worker heartbeat" in failed.stderr
    finally:
        cluster.stop_all()


class _SwallowingRedis:
    """A Redis whose first PING loses the cancellation that lands in it, as redis-py can on
    Python 3.11 (docs/architecture.md); later PINGs answer at once."""

    def __init__(self) -> None:
        self.inside = asyncio.Event()
        self.swallowed = False

    async def ping(self) -> bool:
        if not self.inside.is_set():
            self.inside.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.swallowed = True
        return True


async def test_the_beating_stops_after_a_cancel_lost_in_a_ping(tmp_path: Path) -> None:
    path = tmp_path / heartbeat.FILE_NAME
    redis = _SwallowingRedis()
    beats = asyncio.create_task(heartbeat.keep_beating(redis, path, every_s=0.01))  # type: ignore[arg-type]
    await asyncio.wait_for(redis.inside.wait(), 10)
    beats.cancel()
    done, _ = await asyncio.wait({beats}, timeout=10)  # it went on beating before
    assert done == {beats} and beats.cancelled() and redis.swallowed
    assert not path.exists()  # removed on the way out
