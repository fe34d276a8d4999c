"""The bwrap command line of one run: namespaces, mounts, environment, the wrapper script.

What a run can see is decided here and only here: the read-only system directories (`/usr` and
its links, a few `/etc` files, a made-up `/etc/passwd`), fresh `/proc` and `/dev`, size-capped
tmpfs mounts, the skill read-only, the saved workspace read-only (copied in by the wrapper),
then `/` and `/dev` remounted read-only. The environment is cleared and set from scratch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from chat_shell.sandbox import _wrapper as wrapper
from chat_shell.sandbox._port import (
    OUTPUT_DIR,
    SKILL_DIR,
    WORKSPACE_DIR,
    SandboxLimits,
    SandboxRun,
)

_FIXED_MOUNTS = {"", "/usr", "/etc", "/proc", "/dev", "/tmp", SKILL_DIR, WORKSPACE_DIR, OUTPUT_DIR}
SANDBOX_UID = 1000  # the uid processes see inside the sandbox
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SYSTEM_LINK_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/mime.types",
)


def bwrap_arguments(
    request: SandboxRun,
    limits: SandboxLimits,
    *,
    etc_dir: Path,
    shell: str,
    extra_flags: Sequence[str] = (),
) -> list[str]:
    """Everything after `bwrap` for `request`; `etc_dir` holds `write_etc`'s files."""
    size = str(limits.workspace_bytes)
    args = [
        "--unshare-all",
        "--unshare-user",
        *extra_flags,
        "--die-with-parent",
        "--new-session",
        "--hostname", "sandbox",
        "--uid", str(SANDBOX_UID),
        "--gid", str(SANDBOX_UID),
        *_system_mounts(),
        "--ro-bind", str(etc_dir / "passwd"), "/etc/passwd",
        "--ro-bind", str(etc_dir / "group"), "/etc/group",
        "--proc", "/proc",
        "--dev", "/dev",
        "--size", size, "--tmpfs", "/dev/shm",
        "--size", size, "--tmpfs", "/tmp",
        "--size", size, "--tmpfs", WORKSPACE_DIR,
    ]  # fmt: skip
    if request.skill_dir is not None:
        args += ["--ro-bind", str(request.skill_dir), SKILL_DIR]
    for host, inside in request.mounts:
        if not inside.startswith("/") or inside.rstrip("/") in _FIXED_MOUNTS:
            raise ValueError(f"a sandbox mount may not be placed at {inside!r}")
        args += ["--ro-bind", str(host), inside]
    if request.workspace.is_empty():
        args += ["--dir", OUTPUT_DIR]
    else:  # the wrapper copies it in (and makes the output folder if it is missing)
        args += ["--ro-bind", str(request.workspace.path), wrapper.SAVED_WORKSPACE]
    args += [
        "--remount-ro", "/dev",
        "--remount-ro", "/",
        "--chdir", WORKSPACE_DIR,
        "--clearenv",
        *_environment(request.skill_dir is not None, request.env),
        "--",
        shell, "-c", wrapper.SCRIPT,
        *wrapper.script_arguments(
            request.command,
            cpu_seconds=limits.cpu_seconds,
            open_files=limits.open_files,
            memory_bytes=limits.memory_bytes,
            processes=limits.processes,
        ),
    ]  # fmt: skip
    return args


def write_etc(etc: Path) -> None:
    """The sandbox's own `/etc/passwd` and `/etc/group`: one user, nothing of the host's."""
    etc.mkdir(mode=0o755)
    os.chmod(etc, 0o755)
    for name, text in {
        "passwd": f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/tmp:/bin/sh\n",
        "group": f"sandbox:x:{SANDBOX_UID}:\n",
    }.items():
        (etc / name).write_text(text, encoding="utf-8")
        os.chmod(etc / name, 0o644)


def _system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_LINK_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    for path in ETC_FILES:
        args += ["--ro-bind-try", path, path]
    return args


def _environment(with_skill: bool, extra: Mapping[str, str]) -> list[str]:
    env = {
        **extra,
        "PATH": SANDBOX_PATH,
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "WORKSPACE_DIR": WORKSPACE_DIR,
        "OUTPUT_DIR": OUTPUT_DIR,
    }
    if with_skill:
        env["SKILL_DIR"] = SKILL_DIR
    return [arg for name, value in env.items() for arg in ("--setenv", name, value)]
