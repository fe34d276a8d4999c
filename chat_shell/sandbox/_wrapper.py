"""The shell script that runs first inside every bubblewrap sandbox.

It copies the saved workspace into the size-capped tmpfs, applies the per-run limits that must
be set *inside* the new user namespace (the process count is charged per namespace there; set
outside, it would count the host user's own processes), runs the command in a subshell of its
own (a fork, not another shell to start), then writes a status line and (unless the workspace
is empty) a tar of the workspace to the status pipe. The command gets neither the status pipe
nor any way to raise the limits (hard limits, no capabilities). It is POSIX sh: bash runs it
where present (the command's shell), dash otherwise. The tar is GNU tar's, told to store a hard
link's every name as a file (`--hard-dereference`): the host keeps regular files only, so a
second name stored as a link would be lost.

The status pipe arrives as the script's stdin (the write end: dash only redirects fds 0-9, and
the command's stdin is /dev/null anyway). Arguments: $1 the command, $2.. the limits.
"""

from __future__ import annotations

from chat_shell.sandbox._port import OUTPUT_DIR, WORKSPACE_DIR

SAVED_WORKSPACE = "/run/workspace-saved"
STATUS_MAGIC = "skillhive-sandbox"

# Exit code of the script itself when it could not get as far as the command.
SETUP_FAILED = 125
# Third word of the status line when the workspace holds nothing but an empty output folder:
# then no tar follows (the common case of a script that only prints).
EMPTY = "empty"
W, OUT = WORKSPACE_DIR, OUTPUT_DIR

SCRIPT = f"""\
exec 9>&0 </dev/null
umask 022
if [ -d {SAVED_WORKSPACE} ]; then
  cp -R --preserve=mode,timestamps {SAVED_WORKSPACE}/. {WORKSPACE_DIR}/ || exit {SETUP_FAILED}
  [ -e {OUTPUT_DIR} ] || mkdir {OUTPUT_DIR}
fi
(
  exec 9>&-
  ulimit -S -t "$2" && ulimit -H -t "$3" && ulimit -n "$4" && ulimit -v "$5" && ulimit -c 0 \\
    && {{ ulimit -u "$6" 2>/dev/null || ulimit -p "$6"; }} || exit {SETUP_FAILED}
  command=$1
  set --
  eval "$command"
)
rc=$?
empty={EMPTY}
for entry in {W}/* {W}/.[!.]* {W}/..?* {OUT}/* {OUT}/.[!.]* {OUT}/..?*; do
  [ "$entry" = {OUTPUT_DIR} ] || {{ [ ! -e "$entry" ] && [ ! -L "$entry" ]; }} || empty=
done
[ -d {OUTPUT_DIR} ] && [ ! -L {OUTPUT_DIR} ] || empty=
echo "{STATUS_MAGIC} $rc $empty" >&9
[ -n "$empty" ] || tar --hard-dereference -C {WORKSPACE_DIR} -cf - . >&9 2>/dev/null
exit $rc
"""


def script_arguments(
    command: str, *, cpu_seconds: int, open_files: int, memory_bytes: int, processes: int
) -> list[str]:
    """The positional arguments `SCRIPT` expects ($0 first)."""
    return [
        "sandbox",
        command,
        str(cpu_seconds),
        str(cpu_seconds + 1),  # SIGXCPU at the soft limit, SIGKILL a second later
        str(open_files),
        str(max(1, memory_bytes // 1024)),  # ulimit -v counts KiB
        str(processes),
    ]
