"""Pid 1 of a Docker sandbox, first of all: bubblewrap's root, then no privilege at all.

Docker refuses a tmpfs at ``/``, and the container's writable layer has no size bound
on most storage drivers, so the container starts read-only, as root, with a handful of
capabilities (``CAP_SYS_ADMIN``, ``CAP_SETUID``, ``CAP_SETGID``, ``CAP_SETPCAP``,
``CAP_CHOWN``) and a size-bounded tmpfs Docker mounts at ``spec["root"]``. Before it
reads anything but the host's configuration (no agent input exists yet), pid 1 builds
there the root bubblewrap gives the agent: the tmpfs as ``/`` (the agent's, writable,
bounded), the image's ``/usr`` and ``/etc`` read-only (with Docker's ``/etc`` files and
intercode's ``passwd`` and ``group``), ``bin``, ``lib``, ``sbin``, ... as the image has
them (links, or read-only binds), ``/proc`` with every one of Docker's masked and
read-only paths (a recursive bind of the container's own), ``/dev`` read-only (its
``shm``, ``pts`` and ``mqueue`` as Docker made them), and no ``/sys``. It detaches the
old root's mounts, moves the new root over ``/`` and changes its root into it (see
:func:`switch`; nothing refers to the old root any more), and drops
every privilege for good: the bounding set, the ambient set, ``setgroups([])``, the
agent's gid and uid (which clears the permitted and effective sets), an empty ``capset``
for the inheritable set, ``no_new_privs``, and checks ``/proc/self/status`` that it is
so. The seccomp filter installed next denies the mount and namespace calls that
Docker's profile allows a container with ``CAP_SYS_ADMIN``.
"""

import ctypes
import os

from . import oomguard
from .privs import drop, pty_max

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 32, 4096, 16384
MS_MOVE, MS_PRIVATE = 8192, 1 << 18
MNT_DETACH = 2
MS_NOEXEC = 8
READ_ONLY = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _mount(source, target, flags, fstype=None, data=None):
    _check(_libc.mount(source and source.encode(), target.encode(),
                       fstype and fstype.encode(), ctypes.c_ulong(flags),
                       data and data.encode()),
           "mount %s" % target)


def _bind(source, target, remount_flags):
    """``source`` bound (with its submounts) at ``target``, then the top mount remounted
    with ``remount_flags`` (``None``: as it is)."""
    os.mkdir(target, 0o755)
    _mount(source, target, MS_BIND | MS_REC)
    if remount_flags is not None:
        _mount(None, target, remount_flags)


def build(new, top_level, ptys=None, ro_paths=()):
    """Lay ``new`` (a fresh tmpfs) out as bubblewrap lays out its root; ``ro_paths``:
    more directories of the image shown read-only at the same place."""
    _bind("/usr", new + "/usr", READ_ONLY)
    for rel in ro_paths:
        source = "/" + rel
        if os.path.islink(source) or not os.path.isdir(source):
            raise OSError(0, "the image has no directory %s to show" % source)
        os.makedirs(os.path.dirname(new + source), 0o755, exist_ok=True)
        _bind(source, new + source, READ_ONLY)
    for name in top_level:
        path = "/" + name
        if os.path.islink(path):
            os.symlink(os.readlink(path), new + path)
        elif os.path.isdir(path):
            _bind(path, new + path, READ_ONLY)
    _bind("/etc", new + "/etc", READ_ONLY)
    _bind("/proc", new + "/proc", None)  # its masked and read-only paths come along
    _bind("/dev", new + "/dev", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)
    pts = new + "/dev/pts"
    if os.path.ismount(pts):
        # pseudo-terminals are one pool for the whole host (kernel.pty.max): this
        # container's devpts (Docker's own instance, its options restated: a remount
        # resets the others) gets a share of its own (``ptys``: the host's, see ptyshare)
        _mount(None, pts, MS_REMOUNT | MS_NOSUID | MS_NOEXEC, None,
               "newinstance,ptmxmode=0666,mode=0620,gid=5,max=%d" % pty_max(ptys))


def switch(new):
    """Make ``new`` the root: the old root's own mounts are detached, ``new`` is moved
    over ``/`` (covering what is left of the old root: the image, read-only) and this
    process changes its root into it, as ``switch_root`` and runc's ``no_pivot`` do
    (Docker's seccomp profile denies ``pivot_root`` even with ``CAP_SYS_ADMIN``)."""
    for target in _old_mounts(new):
        _libc.umount2(target.encode(), MNT_DETACH)  # one gone with its parent: fine
    os.chdir(new)
    _mount(".", "/", MS_MOVE)
    _check(_libc.chroot(b"."), "chroot")
    os.chdir("/")


def _old_mounts(new):
    """The old root's mount points but ``/`` and ``new`` and what is under it, deepest
    first."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")
            if point in ("/", new) or point.startswith(new + "/"):
                continue
            found.append(point)
    return sorted(set(found), key=lambda p: -p.count("/"))


def enter(spec):
    """Build the root at ``spec["root"]``, move in, drop to ``spec["uid"]``/``"gid"``.
    With ``spec["agent_memory"]``, the agent's processes get a memory cgroup of that
    size (see :mod:`oomguard`); returns why not when that failed, else ``None``."""
    try:
        return _enter(spec["root"], int(spec["uid"]), int(spec["gid"]), spec["top_level"],
                      spec.get("agent_memory"), spec.get("pty_max"), spec.get("ro_paths") or ())
    except (ValueError, KeyError, TypeError, IndexError) as exc:  # the caller reports OSError
        raise OSError(0, "cannot build the sandbox's root: %r" % (exc,)) from None


def _enter(new, uid, gid, top_level, agent_memory, ptys=None, ro_paths=()):
    _mount(None, "/", MS_REC | MS_PRIVATE)
    unguarded = None if agent_memory is None else oomguard.protect(agent_memory, _mount)
    build(new, top_level, ptys, ro_paths)
    for rel in ro_paths:  # the directories made to hold them are the agent's, as bwrap's
        parts = rel.split("/")
        for i in range(1, len(parts)):
            os.lchown(new + "/" + "/".join(parts[:i]), uid, gid)
    for path in (new, *("%s/%s" % (new, n) for n in top_level
                        if os.path.islink("%s/%s" % (new, n)))):
        os.lchown(path, uid, gid)  # as bubblewrap's: the agent's
    shm = new + "/dev/shm"
    if os.path.ismount(shm):  # Docker's is root's, mode 1777; bubblewrap's the agent's, 755
        os.chmod(shm, 0o755)
        os.chown(shm, uid, gid)
    switch(new)
    null = os.open("/dev/null", os.O_RDWR)  # 0-2 pointed at the old root's /dev/null
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    drop(uid, gid)
    return unguarded
