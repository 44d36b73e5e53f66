"""Attacks on what bubblewrap's pid 1 does with its capabilities before it drops them.

Pid 1 starts with ``CAP_SYS_ADMIN`` and ``CAP_SETPCAP`` in the sandbox's (nested) user
namespace (``bwrap --cap-add``): it moves into a mount namespace of its own, mounts there
the sandbox's own devpts with a share of pseudo-terminals (``max=``) over bubblewrap's,
and drops every capability before it reads anything of the agent (``inbox/privs.py``).
Each test is an attack that must fail: with a capability left, the agent could lift the
share, uncover bubblewrap's unbounded instance, mount over the image or the tree.
"""

from __future__ import annotations

import os

import pytest

from intercode.sandbox.bwrap import BwrapSandbox
from intercode.sandbox.filetree import DIR, Entry, FileTree
from intercode.sandbox.inbox.privs import PTY_MAX
from intercode.sandbox.limits import Limits

TREE = FileTree.of([Entry("work", DIR, 0o755, 1_600_000_000 * 10**9)])
CAP_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


@pytest.fixture(scope="module")
def box():
    sb = BwrapSandbox(limits=Limits(timeout=20))
    sb.start()
    sb.load(TREE)
    yield sb
    sb.close()


def alive(sb: BwrapSandbox) -> None:
    assert sb.run("echo still-here").output == "still-here\n"


def test_bwrap_no_process_keeps_a_capability_not_even_pid_1(box):
    """Every set of every process, pid 1's included, is empty; ``no_new_privs`` and the
    seccomp filter everywhere; the agent's uid and gid."""
    box.run("sleep 30 &")
    r = box.run("for f in /proc/[0-9]*/status; do grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|Uid|"
                "Gid|NoNewPrivs|Seccomp):' $f | tr -s '\t' ' ' | tr '\n' ';'; echo; done")
    lines = [ln for ln in r.output.splitlines() if ln]
    assert len(lines) >= 3, r.output  # pid 1, the shell, sleep, ...
    for line in lines:
        fields = dict(f.strip().split(": ", 1) for f in line.split(";") if f.strip())
        for cap in CAP_SETS:
            assert int(fields[cap], 16) == 0, line
        assert fields["Uid"].split() == ["1000"] * 4 and fields["Gid"].split() == ["1000"] * 4
        assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2", line
    box.run("kill %1 2>/dev/null; wait")


# Runs inside: each privileged call the agent might try, and its outcome.
PRIVILEGED_CALLS = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"unshare": 272, "clone": 56}, "aarch64": {"unshare": 97, "clone": 220}}
NR = NR[os.uname().machine]
def res(name, r):
    print(name, "ok" if r == 0 or (name.startswith("clone") and r > 0) else
          errno.errorcode.get(ctypes.get_errno(), "?"))
    if name.startswith("clone") and r == 0:
        os._exit(0)
def mount(source, target, fstype, flags, data):
    return libc.mount(source, target, fstype, ctypes.c_ulong(flags), data)
res("remount_pts_max", mount(None, b"/dev/pts", None, 32 | 2 | 8, b"max=4096"))
res("mount_new_devpts", mount(b"devpts", b"/tmp", b"devpts", 2 | 8, b"newinstance,max=4096"))
res("mount_devpts_over_pts", mount(b"devpts", b"/dev/pts", b"devpts", 0, b"newinstance"))
res("umount_pts", libc.umount2(b"/dev/pts", 2))
res("mount_tmpfs", mount(b"none", b"/tmp", b"tmpfs", 0, None))
res("remount_dev_rw", mount(None, b"/dev", None, 32 | 4096, None))
res("remount_usr_rw", mount(None, b"/usr", None, 32 | 4096, None))
res("remount_root_size", mount(None, b"/", None, 32, b"size=8g"))
res("unshare_user", libc.syscall(ctypes.c_long(NR["unshare"]), ctypes.c_long(0x10000000)))
res("unshare_mount", libc.syscall(ctypes.c_long(NR["unshare"]), ctypes.c_long(0x20000)))
res("clone_user", libc.syscall(ctypes.c_long(NR["clone"]), ctypes.c_long(0x10000000 | 17),
                               None, None, None, None))
try:
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("100")
    res("raise_max_user_namespaces", 0)
except OSError as exc:
    ctypes.set_errno(exc.errno)
    res("raise_max_user_namespaces", -1)
header = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)(1 << 21, 1 << 21, 0, 0, 0, 0)  # CAP_SYS_ADMIN back
res("capset_sys_admin", libc.capset(header, data))
res("securebits_clear", libc.prctl(28, 0, 0, 0, 0))
"""


def test_bwrap_no_mount_no_user_namespace_no_devpts_change(box):
    """Without a capability, the kernel refuses every mount (the devpts share cannot be
    lifted, nor a fresh instance mounted, nor the one below uncovered), and a user
    namespace (which would give the agent capabilities of its own) cannot be made."""
    r = box.run(f"python3 -c '{PRIVILEGED_CALLS}'")
    results = dict(line.split() for line in r.output.splitlines())
    assert len(results) == 14, r.output
    allowed = {k: v for k, v in results.items() if v not in ("EPERM", "EACCES", "ENOSPC")}
    assert allowed == {}, r.output
    assert results["unshare_user"] == "ENOSPC" and results["clone_user"] == "ENOSPC"
    for command in ("unshare -r true", "unshare -Urm true", "unshare -m true"):
        assert "rc=0" not in box.run(f"{command}; echo rc=$?").output, command
    r = box.run("grep ' /dev/pts ' /proc/self/mountinfo | tail -1; ls /dev/pts")
    assert f"max={PTY_MAX}" in r.output and r.output.endswith("\nptmx\n"), r.output
    alive(box)


PTYS = r'''
import os
n = 0
try:
    while n < 1000:
        os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
        n += 1
except OSError as exc:
    print("ptys", n, exc.strerror)
'''


def test_bwrap_pseudo_terminals_work_within_the_sandboxs_share(box):
    """Ordinary use works (``pty.openpty``, ``script``); ``/dev`` stays read-only; one
    process gets at most the sandbox's share, then ``ENOSPC``; the share is back once
    it exits."""
    r = box.run("python3 -c 'import os, pty; m, s = pty.openpty(); print(os.ttyname(s))'; "
                "script -qc tty /dev/null; touch /dev/x; mkdir /dev/pts/x; echo rc=$?")
    lines = r.output.splitlines()
    assert lines[0] == "/dev/pts/0" and lines[1].startswith("/dev/pts/"), r.output
    assert "Read-only file system" in r.output and "rc=1" in r.output, r.output
    for _ in range(2):
        r = box.run(f"python3 -c '{PTYS}'")
        assert r.output == f"ptys {PTY_MAX} No space left on device\n", r.output
    alive(box)


@pytest.mark.parametrize("kept", [(), ("CAP_SYS_ADMIN",)])
def test_bwrap_without_capabilities_falls_back_with_a_warning(kept, monkeypatch, caplog):
    """A host that refuses pid 1 its capabilities (a setuid bwrap, AppArmor's
    bwrap-userns-restrict; here: fewer are asked for) still runs sandboxes: pid 1's
    confinement fails with EPERM, intercode warns once and starts this sandbox and the
    later ones without any capability and without their own devpts. Pid 1 never serves
    with a capability left (none to lock the securebits and clear the bounding set)."""
    from intercode.sandbox.bwrap import sandbox as bwrap

    monkeypatch.setattr(bwrap, "PID1_CAPS", kept)
    monkeypatch.setattr(bwrap, "_caps_refused", None)
    with caplog.at_level("WARNING", logger="intercode.sandbox.bwrap"):
        boxes = [BwrapSandbox(limits=Limits(timeout=20)) for _ in range(2)]
        try:
            for sb in boxes:
                sb.start()
                sb.load(TREE)
                caps = sb.run("for p in /proc/[0-9]*; do grep -h '^Cap' $p/status; done "
                              "| awk '{print $2}' | sort -u").output.split()
                assert caps == ["0000000000000000"], caps
                assert "--cap-add" not in sb._namespace_args()
        finally:
            for sb in boxes:
                sb.close()
    warned = [r for r in caplog.records if "pseudo-terminals are one pool" in r.getMessage()]
    assert len(warned) == 1 and "Operation not permitted" in warned[0].getMessage()
    assert bwrap._caps_refused is not None


# the agent's shell opens pseudo-terminals until the kernel refuses one, holds them, and
# says how many it got (file descriptors of the shell itself: no process to freeze)
TAKE_PTYS = ("n=0; while [ $n -lt 1000 ] && exec {f}<>/dev/ptmx; do n=$((n+1)); done "
             "2>/dev/null; echo ptys $n")


def _pool() -> int:
    with open("/proc/sys/kernel/pty/max") as f, open("/proc/sys/kernel/pty/reserve") as g:
        return int(f.read()) - int(g.read())


# Was a HOLE: every sandbox's devpts had max=64, but the kernel's pool for all of them is
# one (kernel.pty.max less kernel.pty.reserve: 3072 by default): 48 sandboxes of one
# agent (48 sessions) that each opened 64 took it all, and the next sandbox, another
# session's or the gold's, got none. Now each sandbox's max is its share of a ledger
# that the host's sandboxes share (ptyshare): 64 while it has room, less after.
def test_sandboxes_that_take_every_pseudo_terminal_leave_one_to_the_next():
    """As many sandboxes as the pool has full shares, and a few more, each open every
    pseudo-terminal they can and hold them: the next sandbox still gets one, and so does
    the host."""
    takers: list[BwrapSandbox] = []
    try:
        got = 0
        for _ in range(_pool() // (PTY_MAX * 3 // 4) + 2):  # 66: past the pool at 64 each
            sb = BwrapSandbox(limits=Limits(timeout=30))
            takers.append(sb)
            sb.start()
            sb.load(TREE)
            out = sb.run(TAKE_PTYS).output
            assert out.startswith("ptys "), out
            got += int(out.split()[1])
        last = BwrapSandbox(limits=Limits(timeout=30))
        takers.append(last)
        last.start()
        last.load(TREE)
        out = last.run("exec {f}<>/dev/ptmx && echo opened").output
        assert out == "opened\n", (got, out)
        master, slave = os.openpty()  # the host too
        os.close(master)
        os.close(slave)
    finally:
        for sb in takers:
            sb.close()
