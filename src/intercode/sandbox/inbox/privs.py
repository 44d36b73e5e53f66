"""Pid 1's privileges: what it does with them first, then none at all, for good.

Both backends start pid 1 (the supervisor) with a few capabilities for its set-up and
drop every one before it reads anything of the agent (see :func:`drop`): Docker's as
root (see ``newroot``), bubblewrap's with ``CAP_SYS_ADMIN`` and ``CAP_SETPCAP`` in the
sandbox's user namespace, as the agent's uid (``bwrap --cap-add``). Bubblewrap's pid 1
needs them for one thing (see :func:`confine`): pseudo-terminals come from one pool for
the whole host (``kernel.pty.max`` less the initial instance's reserve), and ``bwrap
--dev`` mounts the sandbox's devpts instance with no ``max`` (it takes no mount options),
so one sandbox could take them all from every other, the gold's included. That devpts
belongs to bubblewrap's outer user namespace (``--dev`` and ``--disable-userns`` put the
sandbox in a nested one), out of reach of pid 1's capabilities; so pid 1 moves into a
mount namespace of its own (a copy, which every process of the agent inherits: they all
descend from it) and mounts there a devpts instance of its own over ``/dev/pts``, with
``max=`` :data:`PTY_MAX`. Nothing in the sandbox is left in the old mount namespace, and
no capability to reach the instance below.
"""

import ctypes
import os

MS_NOSUID, MS_NOEXEC = 2, 8
CLONE_NEWNS = 0x20000
PTY_MAX = 64  # pseudo-terminals of one sandbox at most (both backends; see ptyshare)
# bubblewrap's --dev options (no gid: the tty group is not mapped in its user namespace)
DEVPTS = "newinstance,ptmxmode=0666,mode=0620,max=%d"
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
# SECBIT_NOROOT and SECBIT_NO_CAP_AMBIENT_RAISE set, SECBIT_KEEP_CAPS clear: each locked
# (SECBIT_NO_SETUID_FIXUP stays clear: a change of uid clears the capabilities)
SECUREBITS = 0x01 | 0x02 | 0x20 | 0x40 | 0x80
CAPABILITY_VERSION_3 = 0x20080522
CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def pty_max(value):
    """The sandbox's share of pseudo-terminals the host gave (1 to :data:`PTY_MAX`; the
    host takes it out of its ledger, see ``ptyshare``); ValueError otherwise (``max=0``
    would be no bound at all)."""
    if value is None:
        return PTY_MAX
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= PTY_MAX:
        raise ValueError("a share of pseudo-terminals of %r" % (value,))
    return value


def confine(ptys=None):
    """bubblewrap's pid 1, before anything else: a mount namespace and a devpts instance of
    its own with ``max=`` the sandbox's share ``ptys``, then no privilege (see the
    module docstring). Raises OSError, ValueError."""
    options = DEVPTS % pty_max(ptys)
    _check(_libc.unshare(CLONE_NEWNS), "unshare the mount namespace")
    _check(_libc.mount(b"devpts", b"/dev/pts", b"devpts", ctypes.c_ulong(MS_NOSUID | MS_NOEXEC),
                       options.encode()), "mount the sandbox's devpts")
    drop()


def drop(uid=None, gid=None):
    """Give up every privilege, irrevocably (this process has one thread: the capability
    calls are per thread). ``uid``/``gid``: the ids to switch to, with no supplementary
    group (Docker's pid 1 is root until then); None keeps this process's (bubblewrap's
    user namespace maps no other, and lets no process change its groups)."""
    _check(_libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0), "securebits")
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    if cap == 0:
        _check(-1, "clear the bounding set")
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient set")
    switch = uid is not None
    if switch:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # permitted, effective, inheritable: empty
    _check(_libc.capset(header, data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if switch:
        verify(uid, gid)
    else:
        verify(os.getuid(), os.getgid(), groups=False)


def _hex(field):
    try:
        return int(field.strip(), 16)
    except ValueError:
        return None


def verify(uid, gid, groups=True):
    """Raise unless this process has no capability in any set, ``uid`` and ``gid`` in
    every slot, ``no_new_privs``, and (``groups``) no supplementary group."""
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    bad = [n for n in CAP_FIELDS if _hex(status.get(n, "")) != 0]
    if [int(v) for v in status["Uid"].split()] != [uid] * 4 \
            or [int(v) for v in status["Gid"].split()] != [gid] * 4:
        bad.append("Uid/Gid")
    if (groups and status.get("Groups", "").strip()) \
            or status.get("NoNewPrivs", "").strip() != "1":
        bad.append("Groups/NoNewPrivs")
    if bad:
        raise OSError(0, "privileges left after the drop: %s" % ", ".join(bad))
