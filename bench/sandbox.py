"""Sandbox benchmark: `python -m bench.sandbox`.

Overhead: one `skill_run` of a skill's trivial script (`python3 $SKILL_DIR/scripts/hello.py`)
against the same interpreter started directly on the same file, in alternating pairs
(bench/_util.compare). The skill_run side pays for the tool's checks, the namespaces, the mounts,
the limits, the workspace, reading its output with caps and collecting output files.

Escapes: every escape the issue names is attempted for real (socket, data directory and secrets
key, service environment, writes outside the workspace, fork bomb, 1 GB of output, sleeping past
the deadline, a symlink in the package); `escapes` counts the ones that got out.
Targets: overhead_ratio <= 3, escapes = 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from io import BytesIO
from pathlib import Path

from bench._util import compare
from chat_shell.contracts import Event, SkillSpec
from chat_shell.errors import ProviderLoadError
from chat_shell.ports import InMemoryPackageSource
from chat_shell.sandbox import BubblewrapSandbox, SandboxLimits, SandboxResult, SandboxRun
from chat_shell.sandbox._arguments import SANDBOX_PATH
from chat_shell.sandbox.workspace import write_tree
from chat_shell.skills.active import ActiveSkills
from chat_shell.skills.package_loader import PackageFiles
from chat_shell.tools.sandbox import SandboxAccess, SkillRunner
from chat_shell.tools.sandbox.skill_run import skill_run

TARGET_RATIO = 3.0
HELLO = "print('hello')\n"
LIMITS = SandboxLimits(
    wall_seconds=20, output_bytes=64 * 1024, workspace_bytes=4 * 1024 * 1024, processes=32
)

Probe = Callable[["Probes"], Awaitable[str | None]]  # None: stopped; else how it got out


class Probes:
    """One attempt per escape, each in its own workspace; a host folder posing as the service's
    data directory (world-readable, so only isolation can protect it)."""

    def __init__(self, sandbox: BubblewrapSandbox) -> None:
        self.sandbox = sandbox
        self.data_dir = Path(tempfile.mkdtemp(prefix="skillhive-data-"))
        os.chmod(self.data_dir, 0o755)
        self.key = self.data_dir / "secrets.key"
        self.secret = secrets.token_hex(16)
        self.key.write_text(self.secret, encoding="utf-8")
        os.chmod(self.key, 0o644)

    def close(self) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)

    async def run(
        self, command: str, skill_dir: Path | None = None, **limits: float
    ) -> SandboxResult:
        workspace = self.sandbox.new_workspace()
        try:
            request = SandboxRun(command, workspace, skill_dir, replace(LIMITS, **limits))
            return await self.sandbox.run(request)
        finally:
            workspace.close()

    def skill(self, files: dict[str, bytes]) -> Path:
        folder = Path(tempfile.mkdtemp(dir=self.sandbox.state_dir))
        os.chmod(folder, 0o755)
        write_tree(folder / "skill", files)
        return folder / "skill"


async def socket_out(p: Probes) -> str | None:
    accepted: list[object] = []

    async def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(True)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    script = (
        "import socket\n"
        f"for address in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n"
        "    try:\n"
        "        socket.create_connection(address, timeout=5); print('CONNECTED')\n"
        "    except OSError: pass\n"
    )
    result = await p.run(f'python3 -c "{script}"')
    server.close()
    await server.wait_closed()
    if accepted or "CONNECTED" in result.stdout:
        return "a socket connected"
    return None


async def data_dir_read(p: Probes) -> str | None:
    result = await p.run(f"cat {p.key}; ls {p.data_dir}; cat /proc/1/root{p.key}")
    return "the secrets key was read" if p.secret in result.stdout + result.stderr else None


async def environment_read(p: Probes) -> str | None:
    sentinel = secrets.token_hex(16)
    os.environ["SKILLHIVE_BENCH_SENTINEL"] = sentinel
    try:
        result = await p.run("env; cat /proc/*/environ")
    finally:
        del os.environ["SKILLHIVE_BENCH_SENTINEL"]
    return "the service environment was read" if sentinel in result.stdout else None


async def write_outside(p: Probes) -> str | None:
    skill = p.skill({"SKILL.md": b"original"})
    host_file = p.data_dir / "host.txt"
    host_file.write_text("original", encoding="utf-8")
    targets = [host_file, "/usr/evil", "/etc/passwd", "/evil", "$SKILL_DIR/SKILL.md"]
    await p.run("; ".join(f"echo pwned > {t}" for t in targets), skill_dir=skill)
    changed = host_file.read_text(encoding="utf-8") != "original"
    changed |= (skill / "SKILL.md").read_bytes() != b"original"
    changed |= any(map(_exists, ["/usr/evil", "/evil"]))
    shutil.rmtree(skill.parent)
    return "a file outside the workspace was written" if changed else None


async def fork_bomb(p: Probes) -> str | None:
    script = (
        "import os, time\n"
        "n = 0\n"
        "while n < 10000:\n"
        "    try: pid = os.fork()\n"
        "    except OSError: break\n"
        "    if pid == 0: time.sleep(600); os._exit(0)\n"
        "    n += 1\n"
        "print(n)\n"
    )
    result = await p.run(f'python3 -c "{script}"', processes=LIMITS.processes)
    forked = int(result.stdout.strip() or 0)
    return f"{forked} processes forked" if forked >= LIMITS.processes else None


async def gigabyte_of_output(p: Probes) -> str | None:
    result = await p.run("head -c 1073741824 /dev/zero")
    if len(result.stdout.encode()) > LIMITS.output_bytes or result.exit_code >= 0:
        return "the output was not cut and the run not killed"
    return None


async def past_the_deadline(p: Probes) -> str | None:
    marker = str(600 + secrets.randbelow(10**6))
    result = await p.run(f"setsid sleep {marker} & sleep {marker}", wall_seconds=1)
    survivors = [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and _cmdline(pid).startswith(f"sleep\0{marker}".encode())
    ]
    if not result.timed_out or survivors:
        return "the run outlived its deadline"
    return None


async def package_symlink(p: Probes) -> str | None:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("demo/SKILL.md", "---\nname: demo\ndescription: d\n---\n")
        link = zipfile.ZipInfo("demo/leak")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, str(p.key))
    try:
        PackageFiles.from_zip(buffer.getvalue())
    except ProviderLoadError:
        pass  # the package reader refuses the link: it never reaches a skill folder
    else:
        return "the package reader let a symlink entry through"
    skill = p.skill({"SKILL.md": b"x"})
    (skill / "host-link").symlink_to(p.key)  # a link made on the host side
    result = await p.run('cat "$SKILL_DIR/host-link"', skill_dir=skill)
    shutil.rmtree(skill.parent)
    return "a symlink reached the host" if p.secret in result.stdout else None


def _exists(path: str) -> bool:
    return Path(path).exists()


def _cmdline(pid: str) -> bytes:
    try:
        return Path("/proc", pid, "cmdline").read_bytes()
    except OSError:
        return b""


PROBES: dict[str, Probe] = {
    "socket": socket_out,
    "data_dir": data_dir_read,
    "environment": environment_read,
    "write_outside": write_outside,
    "fork_bomb": fork_bomb,
    "output_1gb": gigabyte_of_output,
    "deadline": past_the_deadline,
    "package_symlink": package_symlink,
}


async def escapes(sandbox: BubblewrapSandbox) -> dict[str, str | None]:
    probes = Probes(sandbox)
    try:
        return {name: await probe(probes) for name, probe in PROBES.items()}
    finally:
        probes.close()


@dataclass
class _Host:
    """The turn as skill_run sees it: one active public skill and its runner."""

    active: ActiveSkills
    skills: dict[str, SkillSpec]
    skill_runner: SkillRunner

    def emit(self, event: Event) -> None:
        """No conversation files here, so no artifact events."""


async def overhead(sandbox: BubblewrapSandbox, pairs: int) -> tuple[float, float, float]:
    """One `skill_run` of a trivial script (package cached, as from the second run of a skill)
    against the same interpreter started directly on the same file."""
    python3 = shutil.which("python3", path=SANDBOX_PATH)
    assert python3 is not None, "python3 is not installed under /usr"
    source = InMemoryPackageSource()
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("bench/SKILL.md", "---\nname: bench\ndescription: d\n---\n")
        archive.writestr("bench/scripts/hello.py", HELLO)
    spec = SkillSpec(name="bench", public=True, sha256=source.add(buffer.getvalue()))
    active = ActiveSkills({"bench": 1}, budget=10, turn=0)
    active.load("bench")
    async with AsyncExitStack() as stack:
        runner = SkillRunner(SandboxAccess(sandbox), source, stack)
        host = _Host(active, {"bench": spec}, runner)
        command = "python3 $SKILL_DIR/scripts/hello.py"

        async def sandboxed() -> None:
            result = json.loads(await skill_run(host, "bench", command))
            assert (result["exit_code"], result["stdout"]) == (0, "hello\n"), result

        async def direct() -> None:
            process = await asyncio.create_subprocess_exec(
                python3,
                script,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={"PATH": SANDBOX_PATH},
            )
            out, _ = await process.communicate()
            assert (process.returncode, out) == (0, b"hello\n")

        await sandboxed()  # writes the skill's folder once, as the first run of a turn would
        # the folder is leased (`skill_dir` is a context manager), held while the pairs run
        async with sandbox.skill_dir(spec.sha256 or "", _unused) as folder:
            script = str(folder / "scripts" / "hello.py")
            found = await compare(sandboxed, direct, pairs=pairs, warmup=3)
    return found.median_ratio, found.candidate_ms, found.baseline_ms


async def _unused() -> dict[str, bytes]:
    raise AssertionError("the skill folder exists already")


async def run(pairs: int) -> int:
    sandbox = BubblewrapSandbox(LIMITS)
    try:
        found = await sandbox.availability()
        if not found.available:
            print(f"sandbox unavailable: {found.reason}")
            return 2
        print(f"bubblewrap {found.version}; interpreters: {', '.join(found.interpreters)}")
        ratio, sandboxed_ms, direct_ms = await overhead(sandbox, pairs)
        print(f"trivial script: skill_run {sandboxed_ms:.1f} ms, direct {direct_ms:.1f} ms")
        outcomes = await escapes(sandbox)
    finally:
        sandbox.close()
    for name, escaped in outcomes.items():
        print(f"  escape {name}: {'GOT OUT: ' + escaped if escaped else 'stopped'}")
    count = sum(1 for escaped in outcomes.values() if escaped)
    print(f"RESULT sandbox overhead_ratio={ratio:.2f} escapes={count}")
    return 0 if ratio <= TARGET_RATIO and count == 0 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30, help="timed sandboxed/direct pairs")
    raise SystemExit(asyncio.run(run(parser.parse_args().pairs)))


if __name__ == "__main__":
    main()
