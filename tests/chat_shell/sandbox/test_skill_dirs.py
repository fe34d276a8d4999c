"""Skill folders: written once per package version, shared, never half-written, and evicted
least recently used once idle folders pass the cache size, never while a run holds one."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from chat_shell.sandbox._skill_dirs import Files, SkillDirs


async def get(dirs: SkillDirs, key: str, files: Files) -> Path:
    async with dirs.lease(key, files) as path:
        return path


def package(size: int) -> Files:
    async def files() -> Mapping[str, bytes]:
        return {"SKILL.md": b"x" * size}

    return files


async def trash_left(root: Path) -> list[str]:
    """What eviction moved aside and has not deleted yet, once the executor had its time."""
    for _ in range(200):
        left = [p.name for p in (root / "skills").iterdir() if p.name.startswith(".trash")]
        if not left:
            break
        await asyncio.sleep(0.01)
    return left


def on_disk(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "skills").iterdir() if not p.name.startswith("."))


async def test_a_package_is_written_once_and_shared_by_concurrent_callers(
    tmp_path: Path,
) -> None:
    calls = 0

    async def files() -> Mapping[str, bytes]:
        nonlocal calls
        calls += 1
        return {"SKILL.md": b"# s", "scripts/run.sh": b"#!/bin/sh\necho hi\n"}

    dirs = SkillDirs(lambda: tmp_path)
    first, second = await asyncio.gather(get(dirs, "abc123", files), get(dirs, "abc123", files))
    third = await get(dirs, "abc123", files)

    assert first == second == third == tmp_path / "skills" / "abc123"
    assert calls == 1
    assert (first / "SKILL.md").read_bytes() == b"# s"
    assert stat.S_IMODE((first / "scripts/run.sh").stat().st_mode) == 0o755
    assert sorted(p.name for p in (tmp_path / "skills").iterdir()) == ["abc123"]


async def test_a_failed_write_leaves_nothing_and_is_tried_again(tmp_path: Path) -> None:
    async def broken() -> Mapping[str, bytes]:
        return {"SKILL.md": b"x", "../escape": b"x"}

    async def good() -> Mapping[str, bytes]:
        return {"SKILL.md": b"x"}

    dirs = SkillDirs(lambda: tmp_path)
    with pytest.raises(ValueError, match="unsafe path"):
        await get(dirs, "v1", broken)
    assert list((tmp_path / "skills").iterdir()) == []
    assert not (tmp_path / "escape").exists()

    assert (await get(dirs, "v1", good)) == tmp_path / "skills" / "v1"
    assert dirs.cached_bytes() == 1


@pytest.mark.parametrize("key", ["", "../x", "a/b", "a b", "x" * 129])
async def test_a_key_that_is_no_plain_name_is_refused(tmp_path: Path, key: str) -> None:
    async def files() -> Mapping[str, bytes]:
        raise AssertionError("never read")

    with pytest.raises(ValueError, match="invalid skill folder key"):
        await get(SkillDirs(lambda: tmp_path), key, files)


async def test_idle_folders_past_the_cache_size_go_least_recently_used_first(
    tmp_path: Path,
) -> None:
    dirs = SkillDirs(lambda: tmp_path, max_bytes=250)
    await get(dirs, "a", package(100))
    await get(dirs, "b", package(100))
    await get(dirs, "a", package(100))  # a is now more recent than b
    assert on_disk(tmp_path) == ["a", "b"]

    await get(dirs, "c", package(100))

    assert on_disk(tmp_path) == ["a", "c"]
    assert dirs.cached_bytes() == 200
    assert await trash_left(tmp_path) == []  # deleted off the event loop


async def test_a_folder_a_run_holds_stays_past_the_cache_size_and_goes_when_released(
    tmp_path: Path,
) -> None:
    dirs = SkillDirs(lambda: tmp_path, max_bytes=150)
    async with dirs.lease("held", package(100)) as held:
        async with dirs.lease("other", package(100)) as other:
            assert (held / "SKILL.md").is_file() and (other / "SKILL.md").is_file()
            assert dirs.cached_bytes() == 200  # both mounted: over the size, nothing removed
        # `other` is idle now and `held` is not: only `other` can go
        assert on_disk(tmp_path) == ["held"]
        assert (held / "SKILL.md").read_bytes() == b"x" * 100
    assert on_disk(tmp_path) == ["held"]  # within the size again: kept for the next run


async def test_an_evicted_version_is_written_again_when_next_run(tmp_path: Path) -> None:
    calls = 0

    async def files() -> Mapping[str, bytes]:
        nonlocal calls
        calls += 1
        return {"SKILL.md": b"y" * 100}

    dirs = SkillDirs(lambda: tmp_path, max_bytes=100)
    await get(dirs, "v1", files)
    await get(dirs, "v2", package(100))
    assert on_disk(tmp_path) == ["v2"]

    path = await get(dirs, "v1", files)

    assert calls == 2
    assert (path / "SKILL.md").read_bytes() == b"y" * 100
    assert on_disk(tmp_path) == ["v1"]
