"""Each way out of the sandbox the issue names is tried for real, and must be stopped cleanly."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
import stat
import tempfile
import zipfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from chat_shell.errors import ProviderLoadError
from chat_shell.sandbox import (
    BubblewrapSandbox,
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    Workspace,
)
from chat_shell.sandbox._port import LIMIT_OUTPUT, LIMIT_WALL_TIME
from chat_shell.sandbox.workspace import write_tree
from chat_shell.skills.package_loader import PackageFiles
from tests.support.sandbox import processes_with
from tests.support.wait import eventually

LIMITS = SandboxLimits(wall_seconds=30, output_bytes=64 * 1024, workspace_bytes=4 * 1024 * 1024)


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


def exists(path: str) -> bool:
    return Path(path).exists()


@pytest.fixture
def host_secrets() -> Iterator[Path]:
    """A service-like data directory with a secrets key, world-readable: only isolation can
    keep a sandboxed script from reading it."""
    data_dir = Path(tempfile.mkdtemp(prefix="skillhive-data-"))
    os.chmod(data_dir, 0o755)
    key = data_dir / "secrets.key"
    key.write_text(secrets.token_hex(16), encoding="utf-8")
    os.chmod(key, 0o644)
    (data_dir / "skillhive.db").write_text("tenant rows", encoding="utf-8")
    yield data_dir
    shutil.rmtree(data_dir)


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[object]]]:
    """A TCP server on the host's loopback that records every connection it gets."""
    accepted: list[object] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer.get_extra_info("peername"))
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield port, accepted
    server.close()
    await server.wait_closed()


async def test_a_socket_cannot_reach_the_host_or_the_internet(
    sandbox: BubblewrapSandbox, workspace: Workspace, listener: tuple[int, list[object]]
) -> None:
    port, accepted = listener
    with socket.create_connection(("127.0.0.1", port)):
        pass  # the listener really is reachable from the host
    script = (
        "import socket\n"
        f"for host, port in [('127.0.0.1', {port}), ('1.1.1.1', 53), ('10.0.0.1', 80)]:\n"
        "    try:\n"
        "        socket.create_connection((host, port), timeout=5)\n"
        "        print('CONNECTED', host)\n"
        "    except OSError as exc:\n"
        "        print('refused', host, type(exc).__name__)\n"
    )
    result = await run(sandbox, workspace, f'python3 -c "{script}"')

    assert result.exit_code == 0, result.stderr
    assert "CONNECTED" not in result.stdout
    assert result.stdout.count("refused") == 3
    assert len(accepted) == 1  # only the host's own check above


async def test_the_data_directory_and_secrets_key_are_not_visible(
    sandbox: BubblewrapSandbox, workspace: Workspace, host_secrets: Path
) -> None:
    key = host_secrets / "secrets.key"
    sentinel = key.read_text(encoding="utf-8")
    result = await run(
        sandbox,
        workspace,
        f"cat {key}; ls {host_secrets}; cat /proc/1/root{key}; ls / /tmp; "
        f"grep -rs {sentinel} /etc /tmp /dev/shm /workspace; echo end",
    )

    assert result.stdout.endswith("end\n")
    assert sentinel not in result.stdout + result.stderr
    assert "skillhive.db" not in result.stdout
    assert f"cat: {key}: No such file or directory" in result.stderr


async def test_the_service_environment_is_not_visible(
    sandbox: BubblewrapSandbox, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentinel = secrets.token_hex(16)
    monkeypatch.setenv("SKILLHIVE_SECRETS_KEY", sentinel)
    result = await run(sandbox, workspace, "env; cat /proc/*/environ | tr '\\0' '\\n'")

    assert result.exit_code == 0, result.stderr
    assert sentinel not in result.stdout
    assert "SKILLHIVE" not in result.stdout
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines() if "=" in line}
    assert names <= {
        "PATH", "HOME", "TMPDIR", "LANG", "PYTHONDONTWRITEBYTECODE", "WORKSPACE_DIR",
        "OUTPUT_DIR", "SKILL_DIR", "PWD", "SHLVL", "_", "OLDPWD",
    }  # fmt: skip


async def test_writing_outside_the_workspace_fails_and_changes_nothing(
    sandbox: BubblewrapSandbox, workspace: Workspace, skill_dir: Path
) -> None:
    skill = skill_dir
    write_tree(skill, {"SKILL.md": b"original"})
    host_file = Path(tempfile.mkdtemp(prefix="skillhive-host-")) / "host.txt"
    host_file.write_text("original", encoding="utf-8")
    targets = ["/usr/evil", "/etc/passwd", "/evil", "/dev/evil", "$SKILL_DIR/SKILL.md", host_file]
    command = "; ".join(f"echo pwned > {t} && echo WROTE {t}" for t in targets)
    try:
        result = await run(sandbox, workspace, command + "; echo end", skill_dir=skill)

        assert "WROTE" not in result.stdout
        assert result.stdout == "end\n"
        assert "Read-only file system" in result.stderr
        assert "No such file or directory" in result.stderr  # the host file's folder
        assert host_file.read_text(encoding="utf-8") == "original"
        assert (skill / "SKILL.md").read_bytes() == b"original"
        assert not exists("/usr/evil") and not exists("/evil")
    finally:
        shutil.rmtree(host_file.parent)


async def test_a_fork_bomb_is_held_at_the_process_limit(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    script = (
        "import os, time\n"
        "children = 0\n"
        "while True:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno, 'after', children, flush=True)\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(600)\n"
        "        os._exit(0)\n"
        "    children += 1\n"
    )
    result = await run(sandbox, workspace, f'python3 -c "{script}"', processes=16)

    assert result.exit_code == 0, result.stderr
    refused, errno, _, children = result.stdout.split()
    assert (refused, int(errno)) == ("refused", 11)  # EAGAIN
    assert int(children) < 16


async def test_a_recursive_fork_bomb_ends_at_the_deadline_with_nothing_left(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    marker = f"bomb{secrets.token_hex(4)}"
    result = await run(
        sandbox,
        workspace,
        f"{marker}() {{ {marker} | {marker} & }}; {marker}; sleep 600",
        wall_seconds=3,
        processes=32,
    )

    assert result.timed_out
    assert LIMIT_WALL_TIME in result.limits_hit
    assert processes_with(marker) == []


async def test_a_gigabyte_of_output_is_cut_at_the_cap_and_the_run_killed(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    result = await run(
        sandbox, workspace, "head -c 1073741824 /dev/zero | tr '\\0' x; echo finished >&2"
    )

    assert result.stdout_truncated
    assert result.stdout == "x" * LIMITS.output_bytes
    assert LIMIT_OUTPUT in result.limits_hit
    assert result.exit_code < 0  # killed, not finished
    assert "finished" not in result.stderr
    assert not result.workspace_saved


async def test_output_on_stderr_is_capped_too(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    result = await run(sandbox, workspace, "yes err >&2")

    assert result.stderr_truncated and not result.stdout_truncated
    assert len(result.stderr) == LIMITS.output_bytes
    assert LIMIT_OUTPUT in result.limits_hit


async def test_sleeping_past_the_deadline_times_out_and_leaves_no_process(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    marker = f"{secrets.randbelow(10**6) + 600}"
    result = await run(
        sandbox,
        workspace,
        f"echo started; setsid sleep {marker} & trap '' TERM; sleep {marker}",
        wall_seconds=1,
    )

    assert result.timed_out
    assert result.limits_hit == (LIMIT_WALL_TIME,)
    assert result.stdout == "started\n"
    assert result.exit_code < 0
    assert not result.workspace_saved
    assert processes_with(f"sleep\0{marker}") == []


async def test_a_cancelled_run_leaves_no_process_behind(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    marker = f"{secrets.randbelow(10**6) + 600}"
    task = asyncio.create_task(run(sandbox, workspace, f"sleep {marker}"))

    async def sleeping() -> list[int]:
        return processes_with(f"sleep\0{marker}")

    await eventually(sleeping)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    async def gone() -> bool:
        return not processes_with(f"sleep\0{marker}")

    await eventually(gone)


def zip_with_symlink(target: str) -> bytes:
    path = Path(tempfile.mkdtemp()) / "skill.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo/SKILL.md", "---\nname: demo\ndescription: d\n---\n")
        link = zipfile.ZipInfo("demo/leak")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, target)
    data = path.read_bytes()
    shutil.rmtree(path.parent)
    return data


def test_a_symlink_in_the_package_never_reaches_the_sandbox(host_secrets: Path) -> None:
    # The one package reader refuses the entry, so no skill folder can ever hold the link.
    key = host_secrets / "secrets.key"
    with pytest.raises(ProviderLoadError) as refused:
        PackageFiles.from_zip(zip_with_symlink(str(key)))
    assert refused.value.details["reason"] == "symlink_entry"


async def test_a_symlink_on_the_host_side_resolves_inside_the_sandbox_only(
    sandbox: BubblewrapSandbox, workspace: Workspace, skill_dir: Path, host_secrets: Path
) -> None:
    key = host_secrets / "secrets.key"
    skill = skill_dir
    write_tree(skill, {"SKILL.md": b"x"})
    (skill / "leak").symlink_to(key)
    (skill / "up").symlink_to("../../../../../../..")
    result = await run(
        sandbox,
        workspace,
        'cat "$SKILL_DIR/leak"; ls "$SKILL_DIR/up/"; echo end',
        skill_dir=skill,
    )

    assert key.read_text(encoding="utf-8") not in result.stdout
    assert "No such file or directory" in result.stderr
    assert "usr" in result.stdout.split()  # `up` reached the sandbox's root, not the host's
    assert host_secrets.name not in result.stdout


async def test_links_a_script_leaves_in_the_workspace_never_reach_the_host(
    sandbox: BubblewrapSandbox, workspace: Workspace, host_secrets: Path
) -> None:
    key = host_secrets / "secrets.key"
    result = await run(
        sandbox,
        workspace,
        f"ln -s {key} out/leak && ln -s ../.. out/up && mkfifo out/fifo && echo ok > out/real",
    )

    assert result.exit_code == 0, result.stderr
    assert [f.path for f in workspace.files()] == ["out/real"]
    with pytest.raises(FileNotFoundError):
        workspace.read("out/leak", max_bytes=1000)


# x86_64 numbers (the suite's machines): a call is refused by the filter, not by a missing
# privilege, when it answers EPERM although the process could make it outside the filter
_SYSCALLS = {
    "keyctl": [250], "bpf": [321], "unshare": [272], "io_uring_setup": [425], "ptrace": [101],
    "mount": [165], "perf_event_open": [298], "userfaultfd": [323], "clone3": [435],
    "mbind": [237], "vsock": [41, 40, 1, 0],  # socket(AF_VSOCK, SOCK_STREAM, 0)
    "getpid": [39], "unix_socket": [41, 1, 1, 0],  # socket(AF_UNIX, SOCK_STREAM, 0)
}  # fmt: skip
_PROBE = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, (number, *args) in %s.items():
    ctypes.set_errno(0)
    result = libc.syscall(number, *(args + [0] * (5 - len(args))))
    if number == 41 and result >= 0:
        os.close(result)  # a socket made
    out[name] = "ok" if result >= 0 else os.strerror(ctypes.get_errno())
out["fds"] = sorted(os.listdir("/proc/self/fd"))
print(json.dumps(out))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="syscall numbers of x86_64")
async def test_kernel_attack_surface_calls_are_refused_by_the_syscall_filter(
    sandbox: BubblewrapSandbox, workspace: Workspace
) -> None:
    # keyrings, BPF, io_uring, userfaultfd, ptrace, mounts and new namespaces reach parts
    # of the kernel a skill script never needs; bwrap alone filtered none of them
    script = workspace.path / "probe.py"
    script.write_text(_PROBE % _SYSCALLS, encoding="utf-8")
    result = await run(sandbox, workspace, "python3 probe.py && echo forked | cat")
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[0])
    allowed = ("getpid", "unix_socket", "clone3")
    refused = {k: v for k, v in found.items() if k in _SYSCALLS and k not in allowed}
    assert set(refused.values()) == {"Operation not permitted"}, found
    assert found["clone3"] == "Function not implemented"  # so libc falls back to clone
    assert found["getpid"] == found["unix_socket"] == "ok"
    assert result.stdout.splitlines()[1] == "forked"  # processes and pipes still work
    assert found["fds"] == ["0", "1", "2", "3"]  # 3: the listing itself; no filter fd left
