"""The bubblewrap (`bwrap`) sandbox engine.

Each run gets new user, pid, ipc, uts, cgroup and network namespaces (no network at all), a
read-only view of the system directories, size-capped tmpfs mounts for `/workspace`, `/tmp` and
`/dev/shm`, the skill's files read-only at `/skill`, and an environment holding only the variables
set in `_arguments.py`. The host's data directory, secrets, environment and other workspaces are
simply not mounted.

Limits: the wall-time deadline kills bwrap's process group, and with it (`--die-with-parent`,
pid namespace) every process of the run; output past the cap does the same; CPU, memory, open
files and processes are rlimits set by the wrapper script inside the namespace. When the service
runs as root, bwrap is started as an unprivileged user (`nobody`): the kernel never enforces the
process limit for root, so a fork bomb would otherwise go unchecked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from chat_shell.sandbox import _wrapper as wrapper
from chat_shell.sandbox._arguments import SANDBOX_PATH, bwrap_arguments, write_etc
from chat_shell.sandbox._port import (
    LIMIT_CPU,
    LIMIT_OUTPUT,
    LIMIT_WALL_TIME,
    LIMIT_WORKSPACE,
    SandboxAvailability,
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
)
from chat_shell.sandbox._seccomp import SeccompUnavailable, filter_program, program_fd
from chat_shell.sandbox._skill_dirs import DEFAULT_CACHE_BYTES, SkillDirs
from chat_shell.sandbox._streams import copy_capped, pipe_reader, read_capped
from chat_shell.sandbox._threads import run_to_end
from chat_shell.sandbox.workspace import MAX_WORKSPACE_ENTRIES, Workspace, WorkspaceRejected

ENGINE = "bubblewrap"
INSTALL_HINT = "install the bubblewrap package (Debian/Ubuntu: apt-get install bubblewrap)"

NOBODY = 65534  # the host uid bwrap runs as when the service is root
INTERPRETERS = ("python3", "bash", "sh", "node")
PROBE_WALL_SECONDS = 20.0
# After the kill, pipes close as soon as the pid namespace is gone; this only guards a bug.
DRAIN_SECONDS = 10.0
SIGXCPU_EXIT = 128 + signal.SIGXCPU
FULL_WORKSPACE_BYTES = 64 * 1024


# Successful probes of this process, by (bwrap, user, state directory parent): the answer and
# the extra bwrap flags found.
_ProbeKey = tuple[str | None, int | None, Path | None]
_WORKING: dict[_ProbeKey, tuple[SandboxAvailability, tuple[str, ...]]] = {}


class BubblewrapSandbox:
    """`Sandbox` on bubblewrap. One instance per process; `close()` removes its directories."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        state_dir: Path | None = None,
        bwrap: str | None = None,
        run_as: int | None = None,
        skill_cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self._skill_cache_bytes = skill_cache_bytes
        self._bwrap = shutil.which(bwrap or "bwrap")  # None: not installed
        self._run_as = run_as if run_as is not None else (NOBODY if os.geteuid() == 0 else None)
        self._setpriv = shutil.which("setpriv")
        self._state_parent = state_dir
        self._state_dir: Path | None = None
        self._shell = "/bin/bash" if shutil.which("bash", path=SANDBOX_PATH) else "/bin/sh"
        self._extra_flags: list[str] = []
        self._probe_task: asyncio.Task[SandboxAvailability] | None = None
        self._skill_dirs = SkillDirs(lambda: self.state_dir, self._skill_cache_bytes)

    @property
    def state_dir(self) -> Path:
        """This engine's host directory (workspaces, skill files), made on first use."""
        if self._state_dir is None:
            base = Path(tempfile.mkdtemp(prefix="skillhive-sandbox-", dir=self._state_parent))
            os.chmod(base, 0o711)  # bwrap, maybe running as `nobody`, must reach the mounts
            write_etc(base / "etc")
            self._state_dir = base
        return self._state_dir

    # -- the port ------------------------------------------------------------------------

    async def availability(self) -> SandboxAvailability:
        """The probe's answer; concurrent callers share one probe, later ones get it cached."""
        if self._probe_task is None:
            self._probe_task = asyncio.create_task(self._probe())
        return await asyncio.shield(self._probe_task)

    async def run(self, request: SandboxRun) -> SandboxResult:
        found = await self.availability()
        if not found.available:
            raise SandboxUnavailable(
                f"the sandbox is not available: {found.reason}", details=found.as_dict()
            )
        return await self._execute(request)

    def new_workspace(self) -> Workspace:
        """A fresh, empty workspace under this engine's directory."""
        return Workspace(self.state_dir)

    def skill_dir(
        self, key: str, files: Callable[[], Awaitable[Mapping[str, bytes]]]
    ) -> AbstractAsyncContextManager[Path]:
        return self._skill_dirs.lease(key, files)

    def give(self, path: Path) -> None:
        folder = stat.S_ISDIR(os.lstat(path).st_mode)
        if self._run_as is None:  # runs execute as this process's user
            os.chmod(path, 0o700 if folder else 0o600)
            return
        # Through the group, not the owner: a folder the runs' user owned would let any of its
        # processes plant a symlink this (root) process then writes or chmods through.
        os.chown(path, -1, self._run_as, follow_symlinks=False)
        os.chmod(path, 0o750 if folder else 0o660)

    def close(self) -> None:
        """Stop a probe still running and remove this engine's directory (its workspaces)."""
        if self._probe_task is not None and not self._probe_task.done():
            self._probe_task.cancel()
            self._probe_task = None
        if self._state_dir is not None:
            shutil.rmtree(self._state_dir, ignore_errors=True)
            self._state_dir = None
            self._skill_dirs = SkillDirs(lambda: self.state_dir, self._skill_cache_bytes)

    # -- probing -------------------------------------------------------------------------

    async def _probe(self) -> SandboxAvailability:
        """A working sandbox is a fact of the host: once one engine's probe succeeded, others
        with the same bwrap, user and directory take its answer (failures are probed again)."""
        key = (self._bwrap, self._run_as, self._state_parent)
        if (known := _WORKING.get(key)) is not None:
            self._extra_flags = list(known[1])
            return known[0]
        found = await self._probe_now()
        if found.available:
            _WORKING[key] = (found, tuple(self._extra_flags))
        return found

    async def _probe_now(self) -> SandboxAvailability:
        if self._bwrap is None:
            return SandboxAvailability(False, ENGINE, reason=f"bwrap not found; {INSTALL_HINT}")
        try:
            filter_program()
        except SeccompUnavailable as exc:  # never a run without its syscall filter
            return SandboxAvailability(False, ENGINE, reason=str(exc))
        try:
            version = (await _output(self._bwrap, "--version")).strip().rpartition(" ")[2]
            if "--disable-userns" in await _output(self._bwrap, "--help"):
                self._extra_flags = ["--disable-userns"]  # bwrap >= 0.8: no nested namespaces
        except OSError as exc:
            return SandboxAvailability(False, ENGINE, reason=f"bwrap cannot be started: {exc}")
        workspace = self.new_workspace()
        try:
            limits = SandboxLimits(wall_seconds=PROBE_WALL_SECONDS)
            # one file, so the workspace's tar runs too (`--hard-dereference` is GNU tar's)
            result = await self._execute(SandboxRun("echo > probe", workspace, limits=limits))
            came_back = result.workspace_saved and (workspace.path / "probe").is_file()
        except OSError as exc:
            return SandboxAvailability(False, ENGINE, reason=f"bwrap cannot be started: {exc}")
        finally:
            workspace.close()
        if result.exit_code != 0 or not came_back:
            detail = result.stderr.strip()[:500] or f"exit code {result.exit_code}"
            return SandboxAvailability(
                False, ENGINE, version=version, reason=f"bwrap cannot create a sandbox: {detail}"
            )
        found = tuple(n for n in INTERPRETERS if shutil.which(n, path=SANDBOX_PATH))
        return SandboxAvailability(True, ENGINE, version=version, interpreters=found)

    # -- running -------------------------------------------------------------------------

    async def _execute(self, request: SandboxRun) -> SandboxResult:
        limits = request.limits or self.limits
        launch, options = self._launch()
        seccomp_fd = program_fd()  # bwrap reads it, loads it, and closes it before the run
        try:
            read_fd, write_fd = os.pipe()
        except BaseException:
            os.close(seccomp_fd)
            raise
        started = time.monotonic()
        try:
            process = await asyncio.create_subprocess_exec(
                *launch,
                *bwrap_arguments(
                    request,
                    limits,
                    etc_dir=self.state_dir / "etc",
                    shell=self._shell,
                    extra_flags=[*self._extra_flags, "--seccomp", str(seccomp_fd)],
                ),
                stdin=write_fd,  # the status pipe; see _wrapper.py
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # one process group to kill
                env={"PATH": "/usr/bin:/bin"},
                pass_fds=(seccomp_fd,),
                **options,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
            os.close(seccomp_fd)
        status_reader, status_transport = await pipe_reader(read_fd)
        archive = request.workspace.scratch_dir / f"run-{os.urandom(8).hex()}.tar"
        try:
            return await self._supervise(
                process,
                copy_capped(status_reader, archive, _status_cap(limits), status_transport.close),
                archive,
                request.workspace,
                limits,
                started,
            )
        finally:
            status_transport.close()
            archive.unlink(missing_ok=True)

    async def _supervise(
        self,
        process: asyncio.subprocess.Process,
        save_status: Coroutine[Any, Any, bool],
        archive: Path,
        workspace: Workspace,
        limits: SandboxLimits,
        started: float,
    ) -> SandboxResult:
        assert process.stdout is not None and process.stderr is not None
        overflow = asyncio.Event()
        stdout = asyncio.create_task(read_capped(process.stdout, limits.output_bytes, overflow.set))
        stderr = asyncio.create_task(read_capped(process.stderr, limits.output_bytes, overflow.set))
        saved = asyncio.create_task(save_status)
        exited = asyncio.create_task(process.wait())
        overflowed = asyncio.create_task(overflow.wait())
        try:
            await asyncio.wait(
                {exited, overflowed}, timeout=limits.wall_seconds, return_when="FIRST_COMPLETED"
            )
            killed = not exited.done()
            if killed:
                _kill(process)
            await exited
            out, err, complete = await asyncio.wait_for(
                asyncio.gather(stdout, stderr, saved), DRAIN_SECONDS
            )
        except BaseException:
            _kill(process)  # the caller was cancelled (or a bug): never leave a run behind
            raise
        finally:
            for task in (stdout, stderr, saved, exited, overflowed):
                task.cancel()
        duration_ms = int((time.monotonic() - started) * 1000)
        limits_hit: list[str] = []
        if killed and not overflow.is_set():
            limits_hit.append(LIMIT_WALL_TIME)
        if overflow.is_set():
            limits_hit.append(LIMIT_OUTPUT)
        exit_code = process.returncode if process.returncode is not None else -signal.SIGKILL
        if exit_code == SIGXCPU_EXIT:
            limits_hit.append(LIMIT_CPU)
        workspace_saved = False
        if not killed:
            # Unpacking up to the workspace cap (and deleting the old state) is disk work:
            # not on the event loop, which every other turn of the worker shares.
            workspace_saved, full = await run_to_end(
                self._save_workspace, archive, complete, workspace, limits
            )
            if full:
                limits_hit.append(LIMIT_WORKSPACE)
        return SandboxResult(
            exit_code=exit_code,
            timed_out=LIMIT_WALL_TIME in limits_hit,
            duration_ms=duration_ms,
            stdout=out.data.decode("utf-8", "replace"),
            stderr=err.data.decode("utf-8", "replace"),
            stdout_truncated=out.overflowed,
            stderr_truncated=err.overflowed,
            limits_hit=tuple(limits_hit),
            workspace_saved=workspace_saved,
        )

    @staticmethod
    def _save_workspace(
        archive: Path, complete: bool, workspace: Workspace, limits: SandboxLimits
    ) -> tuple[bool, bool]:
        """(saved, full): unpack the run's workspace unless it broke a cap or never came."""
        if not complete:
            return False, True
        with archive.open("rb") as handle:
            status = _read_status(handle.readline(200))
            if status is None:
                return False, False  # the wrapper failed before it could report
            if status == "empty":
                workspace.clear()
                return True, False
            try:
                workspace.replace_from_tar(handle, max_bytes=limits.workspace_bytes)
            except WorkspaceRejected:
                return False, True
        free = limits.workspace_bytes - workspace.used_bytes()
        return True, free < min(FULL_WORKSPACE_BYTES, limits.workspace_bytes // 8)

    def _launch(self) -> tuple[list[str], dict[str, Any]]:
        """The argv before bwrap's own arguments, and the spawn options for the user switch.

        `setpriv` switches user in the child after a vfork; Popen's `user=` cannot vfork, and
        forking a worker-sized process costs tens of milliseconds per run.
        """
        assert self._bwrap is not None
        if self._run_as is None:
            return [self._bwrap], {}
        uid = str(self._run_as)
        if self._setpriv is not None:
            switch = [f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
            return [self._setpriv, *switch, self._bwrap], {}
        return [self._bwrap], {"user": self._run_as, "group": self._run_as, "extra_groups": []}


def _kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL bwrap's process group; its pid namespace, and so every process of the run,
    dies with it (`--die-with-parent`). A reaped process is left alone: its pid is free."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _status_cap(limits: SandboxLimits) -> int:
    """The workspace's bytes plus room for tar headers, padding and the status line."""
    return limits.workspace_bytes + 1024 * MAX_WORKSPACE_ENTRIES + 64 * 1024


def _read_status(line: bytes) -> str | None:
    """The wrapper's `<magic> <exit code> [empty]` line, proof that it got past the command:
    "empty" (no tar follows) or "tar"; None if there is no such line."""
    parts = line.split()
    if not 2 <= len(parts) <= 3 or parts[0] != wrapper.STATUS_MAGIC.encode():
        return None
    return "empty" if parts[2:] == [wrapper.EMPTY.encode()] else "tar"


async def _output(*argv: str) -> str:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(process.communicate(), PROBE_WALL_SECONDS)
    return out.decode("utf-8", "replace")
