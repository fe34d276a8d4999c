"""Skill folders: written once per package version, shared, never half-written."""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from chat_shell.sandbox._skill_dirs import SkillDirs


async def test_a_package_is_written_once_and_shared_by_concurrent_callers(
    tmp_path: Path,
) -> None:
    calls = 0

    async def files() -> Mapping[str, bytes]:
        nonlocal calls
        calls += 1
        return {"SKILL.md": b"# s", "scripts/run.sh": b"#!/bin/sh\necho hi\n"}

    dirs = SkillDirs(lambda: tmp_path)
    first, second = await asyncio.gather(dirs.get("abc123", files), dirs.get("abc123", files))
    third = await dirs.get("abc123", files)

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
        await dirs.get("v1", broken)
    assert list((tmp_path / "skills").iterdir()) == []
    assert not (tmp_path / "escape").exists()

    assert (await dirs.get("v1", good)) == tmp_path / "skills" / "v1"


@pytest.mark.parametrize("key", ["", "../x", "a/b", "a b", "x" * 129])
async def test_a_key_that_is_no_plain_name_is_refused(tmp_path: Path, key: str) -> None:
    async def files() -> Mapping[str, bytes]:
        raise AssertionError("never read")

    with pytest.raises(ValueError, match="invalid skill folder key"):
        await SkillDirs(lambda: tmp_path).get(key, files)
