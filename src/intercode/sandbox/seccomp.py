"""A seccomp filter for the sandbox, written as classic BPF by hand (no libseccomp).

It denies the system calls that create memory or kernel objects no other limit
accounts for, or that widen the kernel's attack surface for no task's benefit:

* ``memfd_create`` / ``memfd_secret``: anonymous files live outside every tmpfs size
  limit, and their pages are not in any process's RSS (the watchdog cannot see them);
* System V shared memory, message queues and semaphores (``shmget``, ``msgget``,
  ``semget``; ``ipc`` on i386): they outlive the processes that made them and every reset;
* ``io_uring_*``, ``userfaultfd``, ``bpf``, ``perf_event_open`` and the key calls
  (``add_key``, ``request_key``, ``keyctl``; key quotas are per host user, shared by
  every sandbox of that user);
* ``inotify_init``/``inotify_init1``, ``fanotify_init`` and ``mq_open`` (``ENOSYS``):
  inotify instances, fanotify groups and POSIX message queue bytes are per-user quotas
  too, so one sandbox could take them all from the others;
* ``setxattr``, ``lsetxattr``, ``fsetxattr``, ``setxattrat`` (``EOPNOTSUPP``, what a file
  system without extended attributes answers): attribute values are kernel memory that
  the tmpfs's size does not count. Reading and removing them stays allowed.
* ``pidfd_getfd`` (``EPERM``): a copy of another process's descriptor; a child of the
  shell took the shell's protocol descriptors with it and answered later actions itself.
* ``prlimit64`` with a new limit for another process (``EPERM``; a pid other than 0):
  every process of the sandbox runs as one user, and the kernel lets a process change
  the resource limits of any other of the same user, the supervisor's (pid 1, which
  passes its limits on to every shell, interpreter and engine it starts), the
  interpreters' zygote's and the next episode's spare's included. A process still sets
  its own (``setrlimit``, ``ulimit``, ``prlimit`` running a command) and reads any
  other's (``prlimit --pid``).
* a new scheduling for another process (``EPERM``): ``sched_setscheduler``,
  ``sched_setparam``, ``sched_setattr`` and ``sched_setaffinity`` with a pid other than
  0, ``setpriority`` and ``ioprio_set`` for anything but the caller (a pid other than 0,
  a process group, a user). For the same reason: the kernel lets a process of one user
  lower the scheduling of any other (``chrt -i -p 0 1`` put pid 1, and every process it
  starts later, under ``SCHED_IDLE``; ``renice -n 19 -u USER`` all of them), and with
  ``RLIMIT_NICE`` at 0 no process takes its own back. A process still changes its own
  (``nice``, ``chrt``, ``taskset`` and ``ionice`` running a command; a thread, though,
  names itself by its id, so ``pthread_setaffinity_np`` is refused too).

With ``namespaces`` (the Docker backend, whose container starts with ``CAP_SYS_ADMIN``
for its set-up, so that Docker's own profile allows these calls for its whole life), it
also denies what makes or changes mount and other namespaces: ``mount``, ``umount2``,
``pivot_root``, ``chroot``, ``unshare``, ``setns``, the new mount API (``open_tree``,
``move_mount``, ``fsopen``, ``fsconfig``, ``fsmount``, ``fspick``, ``mount_setattr``),
``clone`` with a ``CLONE_NEW*`` flag and ``clone3`` (``ENOSYS``: its flags are in memory
a filter cannot read; the C library falls back to ``clone``), as Docker's profile does
without ``CAP_SYS_ADMIN``. Without a capability the kernel refuses most of them anyway;
the filter is what keeps an unprivileged user namespace (and the capabilities it grants
inside) out of reach.

Every other call is allowed. A call of another architecture (x32 on x86-64, AArch32
on AArch64) fails with ``ENOSYS``; i386 calls on x86-64 get their own table. The
program is passed to bubblewrap with ``--seccomp FD`` and applies to every process
in the sandbox, the supervisor included.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

__all__ = ["program", "program_fd"]

# classic BPF opcodes
_LD_ABS_W = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
OFFSET_NR = 0  # struct seccomp_data: int nr; __u32 arch; ...
OFFSET_ARCH = 4
OFFSET_ARG0_LOW = 16  # args[0], its low 32 bits (the little-endian arches here)
OFFSET_ARG2_LOW, OFFSET_ARG2_HIGH = 32, 36  # args[2]: prlimit64's new limit (a pointer)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (Docker's mask)
CLONE_NEW_FLAGS = 0x7E020000
X32_SYSCALL_BIT = 0x40000000

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_AARCH64 = 0xC00000B7

# name -> errno of the denial: ENOSYS lets programs fall back as on an older kernel
DENIED_ERRNO = {
    "memfd_create": errno.ENOSYS, "memfd_secret": errno.ENOSYS,
    "shmget": errno.EPERM, "msgget": errno.EPERM, "semget": errno.EPERM,
    "ipc": errno.EPERM,
    "io_uring_setup": errno.ENOSYS, "io_uring_enter": errno.ENOSYS,
    "io_uring_register": errno.ENOSYS, "userfaultfd": errno.ENOSYS, "bpf": errno.ENOSYS,
    "perf_event_open": errno.ENOSYS, "add_key": errno.ENOSYS, "request_key": errno.ENOSYS,
    "keyctl": errno.ENOSYS,
    # per-user kernel quotas, shared by every sandbox of one host user (uid 1000 on
    # docker, the host's user on bubblewrap): inotify instances (128) and POSIX message
    # queue bytes (800 KiB); programs fall back (``tail -f`` polls)
    "inotify_init": errno.ENOSYS, "inotify_init1": errno.ENOSYS, "mq_open": errno.ENOSYS,
    "fanotify_init": errno.ENOSYS,  # its groups are a per-user quota as well (128)
    # extended attributes are kernel memory outside a tmpfs's size (``storage``): the
    # answer of a file system without them, which ``cp -a``, ``tar`` and ``rsync`` accept
    "setxattr": errno.EOPNOTSUPP, "lsetxattr": errno.EOPNOTSUPP,
    "fsetxattr": errno.EOPNOTSUPP, "setxattrat": errno.EOPNOTSUPP,
    # a copy of another process's descriptor: a child of the shell took the shell's
    # protocol descriptors (bash keeps copies of them while an action runs) and answered
    # later actions itself; the kernel's own refusal of a process it may not trace
    "pidfd_getfd": errno.EPERM,
}

NAMESPACE_ERRNO = {
    "mount": errno.EPERM, "umount": errno.EPERM, "umount2": errno.EPERM,
    "pivot_root": errno.EPERM, "chroot": errno.EPERM, "unshare": errno.EPERM,
    "setns": errno.EPERM, "open_tree": errno.EPERM, "move_mount": errno.EPERM,
    "fsopen": errno.EPERM, "fsconfig": errno.EPERM, "fsmount": errno.EPERM,
    "fspick": errno.EPERM, "mount_setattr": errno.EPERM, "clone3": errno.ENOSYS,
}
_NEW_MOUNT_API = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
                  "fsmount": 432, "fspick": 433, "clone3": 435, "mount_setattr": 442}
# the calls of NAMESPACE_ERRNO, and ``clone`` (checked for CLONE_NEW_FLAGS)
NAMESPACE_SYSCALLS: dict[int, dict[str, int]] = {
    AUDIT_ARCH_X86_64: {"clone": 56, "pivot_root": 155, "chroot": 161, "mount": 165,
                        "umount2": 166, "unshare": 272, "setns": 308, **_NEW_MOUNT_API},
    AUDIT_ARCH_I386: {"mount": 21, "umount": 22, "umount2": 52, "chroot": 61, "clone": 120,
                      "pivot_root": 217, "unshare": 310, "setns": 346, **_NEW_MOUNT_API},
    AUDIT_ARCH_AARCH64: {"umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51,
                         "unshare": 97, "clone": 220, "setns": 268, **_NEW_MOUNT_API},
}

# prlimit64(pid, resource, new_limit, old_limit): see _prlimit_block
PRLIMIT64 = {AUDIT_ARCH_X86_64: 302, AUDIT_ARCH_I386: 340, AUDIT_ARCH_AARCH64: 261}

# the calls that change another process's scheduling: name -> ((argument, value), ...),
# the arguments that must hold these values for the call to be the caller's own (else
# EPERM): sched_*(pid, ...): pid 0; setpriority(which, who, prio) and
# ioprio_set(which, who, ioprio): PRIO_PROCESS (0) / IOPRIO_WHO_PROCESS (1), who 0
OWN_ONLY: dict[str, tuple[tuple[int, int], ...]] = {
    "sched_setparam": ((0, 0),), "sched_setscheduler": ((0, 0),),
    "sched_setaffinity": ((0, 0),), "sched_setattr": ((0, 0),),
    "setpriority": ((0, 0), (1, 0)), "ioprio_set": ((0, 1), (1, 0)),
}
OWN_ONLY_SYSCALLS: dict[int, dict[str, int]] = {
    AUDIT_ARCH_X86_64: {"setpriority": 141, "sched_setparam": 142, "sched_setscheduler": 144,
                        "sched_setaffinity": 203, "ioprio_set": 251, "sched_setattr": 314},
    AUDIT_ARCH_I386: {"setpriority": 97, "sched_setparam": 154, "sched_setscheduler": 156,
                      "sched_setaffinity": 241, "ioprio_set": 289, "sched_setattr": 351},
    AUDIT_ARCH_AARCH64: {"ioprio_set": 30, "sched_setparam": 118, "sched_setscheduler": 119,
                         "sched_setaffinity": 122, "setpriority": 140, "sched_setattr": 274},
}

SYSCALLS: dict[int, dict[str, int]] = {
    AUDIT_ARCH_X86_64: {
        "shmget": 29, "semget": 64, "msgget": 68, "add_key": 248, "request_key": 249, "keyctl": 250,
        "perf_event_open": 298, "memfd_create": 319, "bpf": 321, "userfaultfd": 323,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "memfd_secret": 447, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
        "setxattrat": 463, "inotify_init": 253, "inotify_init1": 294, "mq_open": 240,
        "fanotify_init": 300, "pidfd_getfd": 438,
    },
    AUDIT_ARCH_I386: {
        "ipc": 117, "add_key": 286, "request_key": 287, "keyctl": 288,
        "perf_event_open": 336, "memfd_create": 356, "bpf": 357, "userfaultfd": 374,
        "semget": 393, "shmget": 395, "msgget": 399, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "memfd_secret": 447, "setxattr": 226, "lsetxattr": 227,
        "fsetxattr": 228, "setxattrat": 463, "inotify_init": 291, "inotify_init1": 332,
        "mq_open": 277, "fanotify_init": 338, "pidfd_getfd": 438,
    },
    AUDIT_ARCH_AARCH64: {
        "msgget": 186, "semget": 190, "shmget": 194, "add_key": 217, "request_key": 218,
        "keyctl": 219,
        "perf_event_open": 241, "memfd_create": 279, "bpf": 280, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "memfd_secret": 447, "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7,
        "setxattrat": 463, "inotify_init1": 26, "mq_open": 180, "fanotify_init": 262,
        "pidfd_getfd": 438,
    },
}

# native architecture (from platform.machine()) -> the audit arches its processes use
ARCHES = {
    "x86_64": (AUDIT_ARCH_X86_64, AUDIT_ARCH_I386),
    "amd64": (AUDIT_ARCH_X86_64, AUDIT_ARCH_I386),
    "aarch64": (AUDIT_ARCH_AARCH64,),
    "arm64": (AUDIT_ARCH_AARCH64,),
}


class UnsupportedArchitecture(RuntimeError):
    """The host's architecture has no syscall table here."""


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _prlimit_block(nr: int) -> list[bytes]:
    """``prlimit64`` (nr in the accumulator): ``EPERM`` when it names another process
    (pid not 0) and passes a new limit (a pointer that is not NULL); reading allowed.
    Any other call jumps past the block with the accumulator unchanged."""
    return [
        _insn(_JEQ_K, 0, 8, nr),
        _insn(_LD_ABS_W, 0, 0, OFFSET_ARG0_LOW),  # pid_t: 32 bits
        _insn(_JEQ_K, 5, 0, 0),  # this process: allowed
        _insn(_LD_ABS_W, 0, 0, OFFSET_ARG2_LOW),
        _insn(_JEQ_K, 0, 2, 0),  # a new limit: denied
        _insn(_LD_ABS_W, 0, 0, OFFSET_ARG2_HIGH),
        _insn(_JEQ_K, 1, 0, 0),  # NULL: only a read, allowed
        _insn(_RET_K, 0, 0, RET_ERRNO | errno.EPERM),
        _insn(_RET_K, 0, 0, RET_ALLOW),
    ]


def _own_only_block(nr: int, checks: tuple[tuple[int, int], ...]) -> list[bytes]:
    """Call ``nr`` (in the accumulator): allowed when each argument of ``checks``
    (``(index, value)``, its low 32 bits: pids and selectors are ``int``) holds its value,
    else ``EPERM``. Any other call jumps past the block with the accumulator unchanged."""
    n = len(checks)
    block = [_insn(_JEQ_K, 0, 2 * n + 2, nr)]
    for i, (index, value) in enumerate(checks):
        block += [_insn(_LD_ABS_W, 0, 0, OFFSET_ARG0_LOW + 8 * index),
                  _insn(_JEQ_K, 0, 2 * (n - i) - 1, value)]
    return [*block, _insn(_RET_K, 0, 0, RET_ALLOW), _insn(_RET_K, 0, 0, RET_ERRNO | errno.EPERM)]


def _arch_block(arch: int, namespaces: bool = False) -> list[bytes]:
    """Instructions for one architecture: load nr, deny the listed calls, allow the rest."""
    block = [_insn(_LD_ABS_W, 0, 0, OFFSET_NR)]
    if arch == AUDIT_ARCH_X86_64:  # x32 calls carry this bit: deny them all
        block += [_insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),
                  _insn(_RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]
    denied = dict(SYSCALLS[arch])
    errnos = dict(DENIED_ERRNO)
    clone = None
    if namespaces:
        calls = dict(NAMESPACE_SYSCALLS[arch])
        clone = calls.pop("clone")
        denied.update(calls)
        errnos.update(NAMESPACE_ERRNO)
    for name, nr in sorted(denied.items(), key=lambda item: item[1]):
        block += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, RET_ERRNO | errnos[name])]
    block += _prlimit_block(PRLIMIT64[arch])
    for name, nr in sorted(OWN_ONLY_SYSCALLS[arch].items(), key=lambda item: item[1]):
        block += _own_only_block(nr, OWN_ONLY[name])
    if clone is not None:
        # clone with a namespace flag: EPERM; any other clone goes on to the allow below
        block += [_insn(_JEQ_K, 0, 3, clone), _insn(_LD_ABS_W, 0, 0, OFFSET_ARG0_LOW),
                  _insn(_JSET_K, 0, 1, CLONE_NEW_FLAGS),
                  _insn(_RET_K, 0, 0, RET_ERRNO | errno.EPERM)]
    block.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    return block


def program(machine: str | None = None, namespaces: bool = False) -> bytes:
    """The filter for ``machine`` (default: this host) as ``struct sock_filter`` array;
    ``namespaces``: deny the namespace and mount calls too (see the module docstring)."""
    name = (machine or platform.machine()).lower()
    arches = ARCHES.get(name)
    if arches is None:
        raise UnsupportedArchitecture(f"no seccomp syscall table for {name!r}")
    blocks = [_arch_block(arch, namespaces) for arch in arches]
    # dispatch: one "jeq arch" per architecture, then "unknown arch: ENOSYS"
    head = [_insn(_LD_ABS_W, 0, 0, OFFSET_ARCH)]
    n_dispatch = len(arches)
    skip = 0  # instructions of the blocks before this one
    for i, arch in enumerate(arches):
        to_block = (n_dispatch - i - 1) + 1 + skip  # remaining jeqs, the ENOSYS ret, blocks
        if to_block > 255:
            raise ValueError("seccomp program too long for a short jump")
        head.append(_insn(_JEQ_K, to_block, 0, arch))
        skip += len(blocks[i])
    head.append(_insn(_RET_K, 0, 0, RET_ERRNO | errno.ENOSYS))
    return b"".join(head + [insn for block in blocks for insn in block])


def program_fd(machine: str | None = None) -> int:
    """A memfd holding :func:`program`, positioned at 0 (for ``--seccomp``)."""
    fd = os.memfd_create("intercode-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program(machine))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
