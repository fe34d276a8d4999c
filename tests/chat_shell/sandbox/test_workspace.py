"""Host-side workspace and skill folders: hostile tar streams and file names stay contained."""

from __future__ import annotations

import io
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from chat_shell.sandbox import workspace as workspace_module
from chat_shell.sandbox.workspace import Workspace, WorkspaceRejected, write_tree


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    ws = Workspace(tmp_path)
    yield ws
    ws.close()


def tar_of(*members: tuple[tarfile.TarInfo, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    buffer.seek(0)
    return buffer


def entry(
    name: str, kind: bytes = tarfile.REGTYPE, *, mode: int = 0o644, link: str = ""
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.linkname = link
    return info


def test_a_workspace_starts_empty_and_readable_by_the_sandbox_user(workspace: Workspace) -> None:
    assert workspace.is_empty()
    assert list(workspace.files()) == []
    assert stat.S_IMODE(workspace.path.stat().st_mode) == 0o755


def test_files_and_folders_of_a_run_become_the_new_state(workspace: Workspace) -> None:
    workspace.replace_from_tar(
        tar_of(
            (entry("./out", tarfile.DIRTYPE, mode=0o700), b""),
            (entry("./out/report.txt", mode=0o600), b"report"),
            (entry("./run.sh", mode=0o700), b"#!/bin/sh\n"),
        ),
        max_bytes=1000,
    )

    assert [(f.path, f.size) for f in workspace.files()] == [("out/report.txt", 6), ("run.sh", 10)]
    assert [(f.path, f.size) for f in workspace.files("out")] == [("out/report.txt", 6)]
    assert workspace.read("out/report.txt", max_bytes=3) == b"rep"
    assert stat.S_IMODE((workspace.path / "out").stat().st_mode) == 0o755
    assert stat.S_IMODE((workspace.path / "out/report.txt").stat().st_mode) == 0o644
    assert stat.S_IMODE((workspace.path / "run.sh").stat().st_mode) == 0o755


def test_links_devices_and_escaping_names_are_dropped(workspace: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("secret", encoding="utf-8")
    workspace.replace_from_tar(
        tar_of(
            (entry("./leak", tarfile.SYMTYPE, link=str(secret)), b""),
            (entry("./hard", tarfile.LNKTYPE, link=str(secret)), b""),
            (entry("./fifo", tarfile.FIFOTYPE), b""),
            (entry("./dev", tarfile.CHRTYPE), b""),
            (entry("../outside"), b"x"),
            (entry("/etc/absolute"), b"x"),
            (entry("./ok"), b"ok"),
        ),
        max_bytes=1000,
    )

    assert sorted(p.name for p in workspace.path.iterdir()) == ["ok"]
    assert not (tmp_path / "outside").exists()
    assert secret.read_text(encoding="utf-8") == "secret"


def test_a_name_that_is_not_utf8_is_dropped_whether_unpacked_or_found(
    workspace: Workspace,
) -> None:
    # tarfile reads b"caf\xe9" as "caf\udce9": no JSON result or artifact name can encode it
    workspace.replace_from_tar(
        tar_of(
            (entry("./caf\udce9"), b"x"), (entry("./dir\udcff/in"), b"x"), (entry("./ok"), b"ok")
        ),
        max_bytes=1000,
    )
    assert sorted(p.name for p in workspace.path.iterdir()) == ["ok"]
    (workspace.path / b"put-by-hand-\xe9".decode("utf-8", "surrogateescape")).write_bytes(b"x")
    assert [f.path for f in workspace.files()] == ["ok"]


def test_a_workspace_over_its_size_is_rejected_and_the_old_state_kept(
    workspace: Workspace,
) -> None:
    workspace.replace_from_tar(tar_of((entry("./old"), b"old")), max_bytes=100)

    with pytest.raises(WorkspaceRejected, match="larger than 100 bytes"):
        workspace.replace_from_tar(tar_of((entry("./new"), b"n" * 101)), max_bytes=100)
    assert [f.path for f in workspace.files()] == ["old"]


def test_a_workspace_with_too_many_entries_is_rejected(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_module, "MAX_WORKSPACE_ENTRIES", 3)

    with pytest.raises(WorkspaceRejected, match="more than 3"):
        workspace.replace_from_tar(
            tar_of(*((entry(f"./f{i}"), b"") for i in range(4))), max_bytes=100
        )
    assert workspace.is_empty()


def test_garbage_instead_of_a_tar_is_rejected(workspace: Workspace) -> None:
    with pytest.raises(WorkspaceRejected, match="unreadable"):
        workspace.replace_from_tar(io.BytesIO(b"not a tar" * 100), max_bytes=10_000)


def test_reading_never_follows_a_symlink(workspace: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("secret", encoding="utf-8")
    (workspace.path / "leak").symlink_to(secret)

    assert list(workspace.files()) == []
    with pytest.raises(OSError):
        workspace.read("leak", max_bytes=100)
    with pytest.raises(FileNotFoundError):
        workspace.read("../secret", max_bytes=100)


def test_skill_files_are_written_as_plain_files_readable_by_all(tmp_path: Path) -> None:
    write_tree(
        tmp_path / "skill",
        {"SKILL.md": b"# s", "scripts/run.py": b"#!/usr/bin/env python3\n", "link": b"/etc/x"},
    )

    root = tmp_path / "skill"
    assert (root / "link").read_bytes() == b"/etc/x" and not (root / "link").is_symlink()
    assert stat.S_IMODE((root / "scripts/run.py").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "SKILL.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "scripts").stat().st_mode) == 0o755


@pytest.mark.parametrize("name", ["../escape", "/abs", "a/../../b", "nul\x00", "back\\slash", ""])
def test_an_unsafe_skill_file_name_is_an_error(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="unsafe path"):
        write_tree(tmp_path / "skill", {"SKILL.md": b"x", name: b"x"})
    assert not (tmp_path / "escape").exists() and not (tmp_path / "b").exists()
