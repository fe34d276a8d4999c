"""The syscall filter of every sandbox run (bwrap `--seccomp`), built with libseccomp.

bwrap confines a run with namespaces, no capabilities and `no_new_privs`, but filters no
system call, and the worker container runs without Docker's seccomp profile (bwrap needs the
namespaces that profile refuses). This filter puts back the part of that profile a run could
abuse: kernel keyrings, BPF, perf events, userfaultfd and io_uring (frequent in kernel
exploits), ptrace and cross-process memory access, memory placement, mounts and new
namespaces, module, clock, swap and reboot calls, and vsock sockets (which reach the
hypervisor whatever the network namespace). Each answers EPERM, so a program that probes for
one goes on; `clone3` answers ENOSYS, so libc falls back to `clone`, whose namespace flags are
refused. Calls of another architecture (32-bit calls from a 64-bit process) kill the process:
libseccomp's default for a foreign architecture, which would otherwise pass by other numbers.

The program is built once per process and handed to bwrap through a memfd per run; bwrap
loads it just before it runs the wrapper, so every process of the run is under it.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

INSTALL_HINT = "install libseccomp2 (Debian) for the sandbox's syscall filter"

DENIED = (
    # kernel keyrings, BPF, perf, userfaultfd, io_uring: frequent ways into the kernel
    "add_key", "keyctl", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    # mounts, namespaces, the root
    "mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "fsopen", "fsconfig", "fsmount", "fspick", "open_tree", "move_mount", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    # other processes' and the machine's memory placement (Docker's needs CAP_SYS_NICE)
    "mbind", "set_mempolicy", "move_pages", "migrate_pages",
    # the machine's own state
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "iopl", "ioperm", "syslog", "lookup_dcookie", "uselib",
    "personality", "vhangup", "nfsservctl", "_sysctl", "sysfs", "ustat",
)  # fmt: skip

AF_VSOCK = 40  # sockets to the hypervisor and its other guests: no network namespace holds them
# Calls every libseccomp must know on these architectures: one that resolves none of them is
# too old to filter them, and a filter without them would let `clone3` make namespaces.
_REQUIRED = {"x86_64": ("clone3", "io_uring_setup"), "aarch64": ("clone3", "io_uring_setup")}

# clone(2) flags that make a namespace (sched.h): refused as unshare(2) is
_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)


class SeccompUnavailable(Exception):
    """libseccomp could not be loaded or could not build the filter."""


@functools.cache
def filter_program() -> bytes:
    """The filter as a BPF program, as bwrap's `--seccomp` reads it."""
    try:
        import pyseccomp as seccomp  # type: ignore[import-untyped]  # loads libseccomp
    except (ImportError, RuntimeError, OSError) as exc:
        raise SeccompUnavailable(f"libseccomp cannot be loaded ({exc}); {INSTALL_HINT}") from None
    try:
        unknown = [
            name
            for name in _REQUIRED.get(os.uname().machine, ())
            if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) < 0
        ]
        if unknown:
            raise SeccompUnavailable(
                f"libseccomp is too old to filter {', '.join(unknown)}; {INSTALL_HINT} 2.5 or later"
            )
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        refused = seccomp.ERRNO(errno.EPERM)
        rules.add_rule(refused, "socket", seccomp.Arg(0, seccomp.EQ, AF_VSOCK))
        for name in DENIED:
            if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) < 0:
                continue  # not a call of this architecture
            rules.add_rule(refused, name)
        for flag in _NAMESPACE_FLAGS:
            rules.add_rule(refused, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
        if seccomp.resolve_syscall(seccomp.Arch.NATIVE, "clone3") >= 0:
            rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # its flags sit in memory
        with tempfile.TemporaryFile() as program:
            rules.export_bpf(program)
            program.seek(0)
            return program.read()
    except OSError as exc:
        raise SeccompUnavailable(f"the syscall filter could not be built: {exc}") from None


def program_fd() -> int:
    """A new file descriptor holding the program at offset 0, for one run (the caller
    passes it to bwrap and closes its own copy)."""
    fd = os.memfd_create("skillhive-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, filter_program())
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
