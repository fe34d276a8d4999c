"""The POSIX shell script that runs first inside every bubblewrap sandbox.

It copies the saved workspace into the size-capped tmpfs, applies the per-run limits that must
be set *inside* the new user namespace (the process count is charged per namespace there; set
outside, it would count the host user's own processes), runs the command, then writes a status
line and a tar of the workspace to the status pipe. The command gets neither the status pipe nor
any way to raise the limits (hard limits, no capabilities).

The status pipe arrives as the script's stdin (the write end: dash only redirects fds 0-9, and
the command's stdin is /dev/null anyway). Arguments: $1 the command, $2 its shell, $3.. limits.
"""

from __future__ import annotations

from chat_shell.sandbox.port import OUTPUT_DIR, WORKSPACE_DIR

SAVED_WORKSPACE = "/run/workspace-saved"
STATUS_MAGIC = "skillhive-sandbox"

# Exit codes of the script itself, before the command ran.
SETUP_FAILED = 125

SCRIPT = f"""\
exec 9>&0 </dev/null
umask 022
if [ -d {SAVED_WORKSPACE} ]; then
  cp -R --preserve=mode,timestamps {SAVED_WORKSPACE}/. {WORKSPACE_DIR}/ || exit {SETUP_FAILED}
fi
mkdir -p {OUTPUT_DIR} || exit {SETUP_FAILED}
(
  exec 9>&-
  ulimit -S -t "$3" && ulimit -H -t "$4" && ulimit -n "$5" && ulimit -v "$6" && ulimit -c 0 \\
    && {{ ulimit -u "$7" 2>/dev/null || ulimit -p "$7"; }} || exit {SETUP_FAILED}
  exec "$2" -c "$1"
)
rc=$?
set -- $(stat -f -c '%a %S' {WORKSPACE_DIR})
echo "{STATUS_MAGIC} $rc $1 $2" >&9
tar -C {WORKSPACE_DIR} -cf - . >&9 2>/dev/null
exit $rc
"""


def script_arguments(
    command: str,
    shell: str,
    *,
    cpu_seconds: int,
    open_files: int,
    memory_bytes: int,
    processes: int,
) -> list[str]:
    """The positional arguments `SCRIPT` expects ($0 first)."""
    return [
        "sandbox",
        command,
        shell,
        str(cpu_seconds),
        str(cpu_seconds + 1),  # SIGXCPU at the soft limit, SIGKILL a second later
        str(open_files),
        str(max(1, memory_bytes // 1024)),  # ulimit -v counts KiB
        str(processes),
    ]
