"""The bubblewrap engine: what a run sees, what it returns, and each limit."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from chat_shell.sandbox import (
    BubblewrapSandbox,
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
    Workspace,
)
from chat_shell.sandbox._port import LIMIT_CPU, LIMIT_WORKSPACE
from chat_shell.sandbox.workspace import write_tree
from tests.support.sandbox import owners_of_a_run

MiB = 1024 * 1024
LIMITS = SandboxLimits(wall_seconds=30, output_bytes=64 * 1024, workspace_bytes=4 * MiB)


async def run(
    sandbox: BubblewrapSandbox,
    workspace: Workspace,
    command: str,
    *,
    skill_dir: Path | None = None,
    **limits: float,
) -> SandboxResult:
    return await sandbox.run(
        SandboxRun(command, workspace, skill_dir=skill_dir, limits=replace(LIMITS, **limits))
    )


async def test_a_run_reports_exit_code_and_both_streams(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    result = await run(sandbox, workspace, "echo out; echo err >&2; exit 3")

    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out and result.limits_hit == ()
    assert result.duration_ms >= 0


async def test_the_skill_is_read_only_at_skill_dir_and_the_workspace_is_the_cwd(
    sandbox: BubblewrapSandbox, workspace: Workspace, skill_dir: Path
) -> None:
    write_tree(skill_dir, {"SKILL.md": b"# demo", "scripts/hello.py": b"print('hello')"})
    result = await run(
        sandbox,
        workspace,
        'pwd; echo $SKILL_DIR $WORKSPACE_DIR $OUTPUT_DIR; python3 "$SKILL_DIR/scripts/hello.py"; '
        'test -d "$OUTPUT_DIR" && echo has-output-dir; id -un',
        skill_dir=skill_dir,
    )

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "/workspace",
        "/skill /workspace /workspace/out",
        "hello",
        "has-output-dir",
        "sandbox",
    ]


async def test_extra_mounts_are_read_only_and_extra_variables_are_set(
    sandbox: BubblewrapSandbox, workspace: Workspace, skill_dir: Path
) -> None:
    write_tree(skill_dir, {"note.txt": b"mounted\n"})
    command = 'cat /extra/note.txt; echo "$EXTRA"; touch /extra/x 2>/dev/null || echo ro'
    request = SandboxRun(
        command, workspace, limits=LIMITS, mounts=((skill_dir, "/extra"),), env={"EXTRA": "yes"}
    )
    result = await sandbox.run(request)

    assert result.stdout.splitlines() == ["mounted", "yes", "ro"], result.stderr


async def test_without_a_skill_there_is_no_skill_dir(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    result = await run(sandbox, workspace, 'echo "[${SKILL_DIR:-}]"; ls /skill')

    assert result.stdout == "[]\n"
    assert "No such file or directory" in result.stderr


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 -c 'print(6 * 7)'", "42"),
        ("sh -c 'echo $((6 * 7))'", "42"),
        ("bash -c 'echo $((6 * 7))'", "42"),
        ("node -e 'console.log(6 * 7)'", "42"),
    ],
)
async def test_each_interpreter_on_the_host_runs(
    sandbox: BubblewrapSandbox, workspace: Workspace, command: str, expected: str
) -> None:
    interpreter = command.split()[0]
    found = await sandbox.availability()
    if interpreter not in found.interpreters:
        assert shutil.which(interpreter, path="/usr/local/bin:/usr/bin:/bin") is None
        pytest.skip(f"{interpreter} is not installed on this host")
    result = await run(sandbox, workspace, command)

    assert (result.exit_code, result.stdout.strip()) == (0, expected), result.stderr


async def test_the_workspace_carries_from_one_run_to_the_next(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    first = await run(sandbox, workspace, "mkdir -p data && echo 1 > data/n && echo a > out/r.txt")
    second = await run(sandbox, workspace, "cat data/n; echo 2 >> data/n; chmod 600 out/r.txt")
    third = await run(sandbox, workspace, "cat data/n out/r.txt")

    assert first.workspace_saved and second.workspace_saved
    assert second.stdout == "1\n"
    assert third.stdout == "1\n2\na\n", third.stderr
    assert [(f.path, f.size) for f in workspace.files()] == [("data/n", 4), ("out/r.txt", 2)]
    assert workspace.read("out/r.txt", max_bytes=100) == b"a\n"


@pytest.mark.parametrize(
    ("command", "kept"),
    [
        ("echo x > .hidden", ["f ./.hidden"]),
        ("echo x > ..odd", ["f ./..odd"]),
        ("echo x > out/.hidden", ["f ./out/.hidden"]),
        ("mkdir empty-dir", ["d ./empty-dir"]),
        ("rmdir out && echo x > out", ["f ./out"]),
    ],
)
async def test_anything_left_in_the_workspace_is_saved(
    sandbox: BubblewrapSandbox, workspace: Workspace, command: str, kept: list[str]
) -> None:
    await run(sandbox, workspace, command)
    listed = await run(sandbox, workspace, "find . -mindepth 1 -printf '%y %p\\n'")

    assert [line for line in listed.stdout.splitlines() if line != "d ./out"] == kept


async def test_every_run_has_an_output_folder_even_if_the_last_removed_it(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    await run(sandbox, workspace, "rmdir out && echo x > kept")
    result = await run(sandbox, workspace, 'test -d "$OUTPUT_DIR" && cat kept')

    assert (result.exit_code, result.stdout) == (0, "x\n"), result.stderr


async def test_a_run_that_empties_the_workspace_leaves_it_empty(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    await run(sandbox, workspace, "echo x > out/a && mkdir -p d && echo y > d/b")
    assert not workspace.is_empty()
    result = await run(sandbox, workspace, "rm -r out/a d")

    assert result.workspace_saved
    assert workspace.is_empty() and list(workspace.files()) == []


async def test_a_run_stopped_by_a_limit_leaves_the_workspace_as_it_was(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    await run(sandbox, workspace, "echo kept > out/state")
    result = await run(sandbox, workspace, "echo lost > out/state; rm -f out/state; sleep 600",
                       wall_seconds=1)  # fmt: skip

    assert result.timed_out and not result.workspace_saved
    assert workspace.read("out/state", max_bytes=100) == b"kept\n"


async def test_cpu_time_past_the_limit_stops_the_command(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    result = await run(sandbox, workspace, "python3 -c 'while True: pass'", cpu_seconds=1)

    assert not result.timed_out
    assert result.limits_hit == (LIMIT_CPU,)
    assert result.exit_code == 128 + 24  # SIGXCPU


async def test_memory_past_the_limit_fails_to_allocate(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    result = await run(
        sandbox,
        workspace,
        "python3 -c 'b = bytearray(400 * 1024 * 1024); print(\"allocated\")'",
        memory_bytes=256 * MiB,
    )

    assert result.exit_code == 1
    assert "allocated" not in result.stdout
    assert "MemoryError" in result.stderr


async def test_open_files_past_the_limit_are_refused(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    script = (
        "import os\n"
        "fds = []\n"
        "try:\n"
        "    while True: fds.append(os.open('/dev/null', os.O_RDONLY))\n"
        "except OSError as exc: print(exc.errno, len(fds) < 32)\n"
    )
    result = await run(sandbox, workspace, f'python3 -c "{script}"', open_files=32)

    assert result.stdout == "24 True\n", result.stderr  # EMFILE


async def test_filling_the_workspace_stops_at_its_size_and_is_reported(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    result = await run(sandbox, workspace, "head -c 8388608 /dev/zero > out/big; echo $?")

    assert "No space left on device" in result.stderr
    assert LIMIT_WORKSPACE in result.limits_hit
    assert result.workspace_saved
    assert sum(f.size for f in workspace.files()) <= LIMITS.workspace_bytes


@pytest.mark.parametrize("directory", ["/tmp", "/dev/shm"])
async def test_scratch_directories_are_capped_like_the_workspace(
    sandbox: BubblewrapSandbox, workspace: Workspace, directory: str
) -> None:
    result = await run(sandbox, workspace, f"head -c 8388608 /dev/zero > {directory}/big")

    assert result.exit_code != 0
    assert "No space left on device" in result.stderr


async def test_a_missing_bwrap_is_reported_unavailable_with_the_package_name(
    tmp_path: Path,
) -> None:
    engine = BubblewrapSandbox(state_dir=tmp_path, bwrap=str(tmp_path / "no-such-bwrap"))
    found = await engine.availability()
    workspace = engine.new_workspace()
    state_dir = engine.state_dir

    assert not found.available
    assert found.reason is not None and "bubblewrap" in found.reason
    with pytest.raises(SandboxUnavailable) as raised:
        await engine.run(SandboxRun("true", workspace))
    assert raised.value.code == "sandbox_unavailable"
    assert raised.value.details["available"] is False
    engine.close()
    assert not state_dir.exists()


def fake_bwrap(script: str) -> Path:
    """A folder holding an executable `bwrap`, reachable when runs start as `nobody`."""
    folder = Path(tempfile.mkdtemp())
    folder.chmod(0o755)
    (folder / "bwrap").write_text(script, encoding="utf-8")
    (folder / "bwrap").chmod(0o755)
    return folder


async def test_a_bwrap_that_cannot_build_a_sandbox_is_reported_with_its_error() -> None:
    folder = fake_bwrap(
        '#!/bin/sh\n[ "$1" = --version ] && echo "bubblewrap 0.8.0" && exit 0\n'
        "echo 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    fake = folder / "bwrap"
    engine = BubblewrapSandbox(bwrap=str(fake))
    found = await engine.availability()
    engine.close()
    shutil.rmtree(folder)

    assert not found.available
    assert found.reason is not None and "No permissions to create new namespace" in found.reason
    assert found.version == "0.8.0"


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="processes"):
        SandboxLimits(processes=0)


async def test_another_engine_takes_a_working_probe_as_known(sandbox: BubblewrapSandbox) -> None:
    other = BubblewrapSandbox()
    found = await other.availability()

    assert found == await sandbox.availability()
    assert other._state_dir is None  # no probe ran: it would have made the directory
    other.close()


@pytest.mark.parametrize("switch", ["setpriv", "popen"])
async def test_as_root_runs_are_processes_of_nobody_on_the_host(switch: str) -> None:
    engine = BubblewrapSandbox(LIMITS)
    if switch == "popen":
        engine._setpriv = None  # as on a host without util-linux's setpriv

    assert await owners_of_a_run(engine) == {65534}


CONNECT = (
    "import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
    "print(s.recv(5).decode())"
)
PLANT = "import os, sys; os.symlink('/etc/passwd', os.path.dirname(sys.argv[1]) + '/main.py')"


async def test_a_folder_and_socket_given_to_runs_are_theirs_alone(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    """What the host makes for a run (code mode's module folder and bridge socket) the run can
    use, and no other local user can enter or connect to."""
    folder = Path(tempfile.mkdtemp(dir=workspace.scratch_dir))
    (folder / "note.txt").write_text("mounted\n")
    os.chmod(folder / "note.txt", 0o644)

    async def hello(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(hello, path=str(folder / "s.sock"))
    try:
        sandbox.give(folder)
        sandbox.give(folder / "s.sock")
        command = f'cat /extra/note.txt; python3 -c "{CONNECT}" /extra/s.sock'
        result = await sandbox.run(
            SandboxRun(command, workspace, limits=LIMITS, mounts=((folder, "/extra"),))
        )
        assert result.stdout.splitlines() == ["mounted", "hello"], result.stderr

        given = [os.stat(folder), os.stat(folder / "s.sock")]
        if os.geteuid() == 0:  # runs are nobody's: through its group, the folder stays root's
            modes = [(0, 65534, 0o750), (0, 65534, 0o660)]
        else:
            modes = [(os.geteuid(), os.getegid(), 0o700), (os.geteuid(), os.getegid(), 0o600)]
        assert [(s.st_uid, s.st_gid, s.st_mode & 0o777) for s in given] == modes
        if os.geteuid() == 0:
            # Another local user cannot connect; the runs' user cannot plant a file (a symlink
            # root would write through) in the folder.
            for uid, attempt in [(4321, CONNECT), (65534, PLANT)]:
                other = await asyncio.create_subprocess_exec(
                    "/usr/bin/python3", "-c", attempt, str(folder / "s.sock"),
                    user=uid, group=uid, extra_groups=[],
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                )  # fmt: skip
                out, err = await other.communicate()
                assert other.returncode != 0 and b"PermissionError" in err, (uid, out, err)
    finally:
        server.close()
        await server.wait_closed()
