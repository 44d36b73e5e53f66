"""Docker only: the agent's processes in a memory cgroup of their own, below pid 1's.

A container is one memory cgroup, and when it is full the kernel's OOM killer picks
the largest process in it. The agent can fill it with memory no process owns (pipe
buffers) and processes of a few KiB each (page tables of sparse mappings), and the
largest process is then pid 1, the supervisor: the agent's failure would become an
infrastructure error. So pid 1, while it is still root and before any agent input
exists (see :mod:`newroot`), makes a child cgroup ``agent`` of the container's with
the agent's share of the memory (its limit, its root's tmpfs and ``/dev/shm``) and
keeps its ``cgroup.procs`` open. Every process the supervisor starts for the agent
joins it before it runs anything of the agent's: a forked interpreter or SQL engine
at once (:func:`join`), bash as the first command of its ``-c`` script
(:data:`SHELL_JOIN` on descriptor :data:`AGENT_FD`, closed next), a program run to
completion from its ``preexec_fn``. What the agent's processes start stays in it. An
OOM in ``agent`` kills only the agent's processes; pid 1 keeps the container's
margin. The agent cannot move back: it has no ``/sys``, no capability, no mount, and
the kernel checks a write to ``cgroup.procs`` against the credentials of whoever
opened it (root, here: Linux 5.16 on; older kernels check the writer, uid 1000, who
may not write there).

cgroup v1 (Docker with the ``cgroupfs`` driver on a hybrid host: tested here) nests
a ``memory`` cgroup with processes at every level; cgroup v2 (Docker Desktop, current
distributions) does not allow processes in a cgroup whose controllers its children
use, so pid 1 moves itself to a sibling ``supervisor`` first. Where neither works
(no ``/sys/fs/cgroup``, a rootless engine without delegation), the sandbox still
runs and :func:`protect` says why: the OOM killer can then pick pid 1 again.
"""

import os

from . import proto

AGENT_FD = 9  # where bash (or sh: one digit) finds the procs file, closed at once
SHELL_JOIN = "{ printf 0 >&%d; } 2>/dev/null; exec %d>&-; " % (AGENT_FD, AGENT_FD)
FIRST_FD = 200  # the procs file is kept above the descriptors processes use
ROOT = "/sys/fs/cgroup"
MS_REMOUNT, MS_BIND, MS_NOSUID, MS_NODEV, MS_NOEXEC = 32, 4096, 2, 4, 8

_procs = None  # the agent cgroup's cgroup.procs, open for writing (None: unprotected)


def active():
    """Whether the agent's processes get their own cgroup."""
    return _procs is not None


def join():
    """In a child forked by the supervisor, before anything else: move this process into
    the agent's cgroup and close the descriptor (a no-op when unprotected)."""
    global _procs
    fd, _procs = _procs, None
    if fd is None:
        return
    try:
        os.write(fd, b"0")
    except OSError:
        pass  # as bash's join does: the process runs, unguarded (a test checks it joins)
    try:
        os.close(fd)
    except OSError:
        pass


def spawn_actions():
    """``posix_spawn`` file actions that give bash the procs file on :data:`AGENT_FD`."""
    if _procs is None:
        return []
    return [(os.POSIX_SPAWN_DUP2, _procs, AGENT_FD)]


def shell_prefix():
    """The start of bash's ``-c`` script: join, then close the descriptor."""
    return SHELL_JOIN if _procs is not None else ""


def protect(limit, mount):
    """Make the agent's cgroup with ``limit`` bytes of memory; ``None`` when done, else
    why not. ``mount(source, target, flags, fstype, data)`` is :func:`newroot._mount`.
    Runs as root in pid 1, alone (no thread yet)."""
    global _procs
    memory_v1 = ROOT + "/memory"
    try:
        if os.path.isfile(memory_v1 + "/memory.limit_in_bytes"):
            _procs = _v1(memory_v1, int(limit), mount)
        elif os.path.isfile(ROOT + "/cgroup.controllers"):
            _procs = _v2(ROOT, int(limit), mount)
        else:
            return "no memory cgroup at %s" % ROOT
    except OSError as exc:
        return "%s: %s" % (exc.filename or "cgroup", exc.strerror or exc)
    return None


def _writable(path, mount):
    """Docker mounts the container's cgroup read-only: remount this bind read-write (the
    whole of ``/sys`` is detached before the agent exists)."""
    mount(None, path, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, None, None)


def _write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _open_procs(path):
    return proto.move_high(os.open(path, os.O_WRONLY | os.O_CLOEXEC), FIRST_FD)


def _v1(memory, limit, mount):
    _writable(memory, mount)
    agent = memory + "/agent"
    if not os.path.isdir(agent):
        os.mkdir(agent, 0o755)
    _write(agent + "/memory.limit_in_bytes", str(limit))
    if os.path.isfile(agent + "/memory.memsw.limit_in_bytes"):  # no swap either
        _write(agent + "/memory.memsw.limit_in_bytes", str(limit))
    return _open_procs(agent + "/cgroup.procs")


def _v2(root, limit, mount):
    _writable(root, mount)
    with open(root + "/cgroup.controllers") as f:
        if "memory" not in f.read().split():
            raise OSError(0, "the memory controller is not delegated to the container",
                          root + "/cgroup.controllers")
    for name in ("supervisor", "agent"):
        if not os.path.isdir(root + "/" + name):
            os.mkdir(root + "/" + name, 0o755)
    _write(root + "/supervisor/cgroup.procs", "0")  # no process may stay at the top
    _write(root + "/cgroup.subtree_control", "+memory")
    _write(root + "/agent/memory.max", str(limit))
    if os.path.isfile(root + "/agent/memory.swap.max"):
        _write(root + "/agent/memory.swap.max", "0")
    return _open_procs(root + "/agent/cgroup.procs")
