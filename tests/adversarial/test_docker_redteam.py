"""Red-team attacks on the Docker backend's root-then-drop start (``inbox/newroot.py``).

The agent controls every action and runs as uid 1000 with no capability in the
container. Each test is an attack that must fail; a test that fails here is a hole.
Holes found on the review of the ``docker-root`` branch are marked ``HOLE`` with the
reproducer in the test itself (see the report of branch ``docker-redteam``).
"""

from __future__ import annotations

import platform

import pytest
from backends import need

from intercode.errors import SnapshotError
from intercode.sandbox import create_sandbox
from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
from intercode.sandbox.limits import Limits

TREE = FileTree.of([Entry("work", DIR, 0o755, 1_600_000_000 * 10**9),
                    Entry("work/a.txt", FILE, 0o644, 1_600_000_000 * 10**9, b"alpha\n")])


def _fresh(backend: str, **limits: int) -> object:
    need(backend)
    sb = create_sandbox(backend, limits=Limits(timeout=20, **limits))
    sb.start()
    sb.load(TREE)
    return sb


@pytest.fixture(scope="module")
def box():
    sb = _fresh("docker")
    yield sb
    sb.close()


# -- signals to pid 1 ---------------------------------------------------------------------

# HOLE (both backends, found on docker): the supervisor is pid 1 and runs as the agent's
# uid, so the kernel lets the agent signal it; pid 1 of a pid namespace only drops the
# signals it has no handler for, and Python installs one for SIGINT (KeyboardInterrupt).
# Reproducer: the action `kill -INT 1`; the next action raises
# SandboxError("sandbox supervisor exited") on the host, which the runner records as an
# infrastructure error (status "error"), not as the agent's outcome.
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
@pytest.mark.parametrize("sigs", ["INT", "TERM HUP QUIT USR1 USR2 ALRM CHLD PIPE XFSZ WINCH 33"])
def test_signals_to_pid_1_do_not_end_the_sandbox(backend, sigs):
    sb = _fresh(backend)
    try:
        r = sb.run("".join(f"kill -{s} 1; kill -{s} 1; " for s in sigs.split())
                   + "sleep 0.3; echo sent")
        assert r.output.endswith("sent\n"), r.output
        assert sb.run("echo alive").output == "alive\n"
    finally:
        sb.close()


def test_pid_1_is_not_traceable_nor_its_memory_readable(box):
    r = box.run("python3 -c \"\nimport ctypes, errno, os\nlibc = ctypes.CDLL(None, use_errno=True)"
                "\nr = libc.syscall(101, 16, 1, 0, 0)\nprint('ptrace', r, errno.errorcode."
                "get(ctypes.get_errno()))\nfd = os.pidfd_open(1)\ntry:\n libc.syscall(438, fd, "
                "3, 0)\nexcept OSError: pass\nr = libc.syscall(438, fd, 64, 0)\nprint('getfd', r, "
                "errno.errorcode.get(ctypes.get_errno()))\n\"; cat /proc/1/mem 2>&1 | head -c 60;"
                " echo; readlink /proc/1/root /proc/1/cwd /proc/1/exe || echo denied")
    lines = r.output.splitlines()
    assert lines[0] == "ptrace -1 EPERM", r.output
    assert lines[1] == "getfd -1 EPERM", r.output
    assert "Permission denied" in lines[2] and lines[-1] == "denied", r.output


# -- processes: one sandbox's fork bomb must not starve another ----------------------------

# Was a HOLE (docker only; fixed on this branch: docker sets no RLIMIT_NPROC, its
# PidsLimit bounds each container): every container's agent is uid 1000 of the host's user namespace
# (no user namespace on docker), and the supervisor sets RLIMIT_NPROC (limits.processes),
# which the kernel checks against every process of that uid on the host: all docker
# sandboxes (and the host's own uid 1000) share one count. Reproducer: in sandbox A
# `for i in $(seq 220); do sleep 20 & done; disown -a` (under its own alarm at 90 %);
# sandbox B, with 4 processes, then gets `fork: retry: Resource temporarily unavailable`
# for `sleep 5 &`. On bubblewrap each sandbox has its own user namespace (its own count).
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_a_fork_bomb_in_one_sandbox_leaves_another_able_to_fork(backend):
    a, b = _fresh(backend), _fresh(backend)
    try:
        r = a.run("for i in $(seq 220); do sleep 20 & done 2>/tmp/err; disown -a; "
                  "sort -u /tmp/err; ls /proc | grep -c '^[0-9]'")
        assert int(r.output.split()[-1]) >= 210, r.output  # A holds its processes
        r = b.run("for i in $(seq 40); do sleep 10 & done 2>/tmp/err; disown -a; "
                  "sort -u /tmp/err; ls /proc | grep -c '^[0-9]'")
        assert "fork" not in r.output, r.output
        counted = r.output.split()
        assert counted and int(counted[-1]) >= 40, r.output
    finally:
        a.close()
        b.close()


# -- privileged and risky calls -----------------------------------------------------------

SYSCALLS = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"io_uring_setup": 425, "userfaultfd": 323, "keyctl": 250, "add_key": 248,
                 "bpf": 321, "perf_event_open": 298, "kexec_load": 246, "open_by_handle_at": 304,
                 "fanotify_init": 300, "syslog": 103, "sethostname": 170, "mknodat": 259,
                 "memfd_secret": 447, "process_vm_readv": 310, "move_mount": 429,
                 "mount_setattr": 442, "fspick": 433, "umount2": 166, "setns": 308},
      "aarch64": {"io_uring_setup": 425, "userfaultfd": 282, "keyctl": 219, "add_key": 217,
                  "bpf": 280, "perf_event_open": 241, "kexec_load": 104,
                  "open_by_handle_at": 265, "fanotify_init": 262, "syslog": 116,
                  "sethostname": 161, "mknodat": 33, "memfd_secret": 447,
                  "process_vm_readv": 270, "move_mount": 429, "mount_setattr": 442,
                  "fspick": 433, "umount2": 39, "setns": 268}}[os.uname().machine]
buf = ctypes.create_string_buffer(256)
attr = ctypes.create_string_buffer(128)
attr[4] = 112
def sc(name, *args):
    r = libc.syscall(ctypes.c_long(NR[name]), *args)
    print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
sc("io_uring_setup", 4, buf)
sc("userfaultfd", 0)
sc("keyctl", 0, -4, 0)
sc("add_key", b"user", b"x", b"y", 1, -4)
sc("bpf", 0, buf, 64)
sc("perf_event_open", attr, 0, -1, -1, 0)
sc("kexec_load", 0, 0, 0, 0)
sc("open_by_handle_at", -100, buf, 0)
sc("fanotify_init", 0, 0)
sc("syslog", 3, buf, 10)
sc("sethostname", b"x", 1)
sc("mknodat", -100, b"/chr", 0o20666, (1 << 8) | 3)
sc("memfd_secret", 0)
sc("process_vm_readv", 1, 0, 0, 0, 0, 0)
sc("move_mount", -100, b"/usr", -100, b"/work", 0)
sc("mount_setattr", -100, b"/usr", 0, buf, 32)
sc("fspick", -100, b"/", 0)
sc("umount2", b"/usr", 2)
sc("setns", os.pidfd_open(1), 0)
"""


def test_risky_syscalls_are_denied(box):
    """Calls Docker's profile allows a container started with CAP_SYS_ADMIN, or that
    bubblewrap's filter denies: none succeeds for the agent."""
    r = box.run(f"python3 -c '{SYSCALLS}' 2>&1", timeout=30)
    results = dict(line.split() for line in r.output.splitlines())
    assert len(results) == 19, r.output
    assert {k: v for k, v in results.items() if v == "ok"} == {}, r.output


def test_no_setuid_binary_or_file_capability_and_nosuid_everywhere(box):
    """(Docker's single-file binds in /etc lack nosuid: read-only non-executable files.)"""
    r = box.run("find / -xdev \\( -perm -4000 -o -perm -2000 \\) 2>/dev/null | head -3; "
                "echo ---; awk '$5 != \"/\" && $5 !~ /^\\/(proc|etc)\\// && $6 !~ /nosuid/ "
                "{print $5, $6}' /proc/self/mountinfo; echo ---; "
                "getcap -r /usr 2>/dev/null | head -3")
    assert r.output == "---\n---\n", r.output


def test_kernel_knobs_and_sysrq_are_out_of_reach(box):
    r = box.run("for f in /proc/sysrq-trigger /proc/sys/kernel/core_pattern "
                "/proc/sys/vm/drop_caches /proc/1/oom_score_adj /proc/1/comm; do "
                "(echo 1 > $f) 2>/dev/null && echo wrote $f; done; echo -1000 > "
                "/proc/self/oom_score_adj 2>/dev/null && echo lowered; echo done")
    assert r.output == "done\n", r.output


def test_no_directory_outside_the_root_through_any_descriptor(box):
    """No process of the agent holds a descriptor of the old root (an fchdir escape)."""
    box.run("sleep 30 & disown")
    r = box.run("for p in /proc/[0-9]*; do for f in $p/fd/* $p/cwd $p/root; do "
                "l=$(readlink $f 2>/dev/null) || continue; case $l in pipe:*|socket:*|"
                "anon_inode:*|/dev/null|/proc/*) ;; *) [ -d $f ] && echo $f $l;; esac; done; "
                "done | grep -v -E ' (/|/work)$'; echo end")
    assert r.output == "end\n", r.output


def test_chroot_dot_dot_through_a_pre_opened_directory_stays_inside(box):
    """The classic escape: a directory fd, then ``..`` past the root; the kernel stops
    at the process's root, which is the new root."""
    r = box.run("python3 -c \"\nimport os\nfd = os.open('/', os.O_RDONLY)\nos.fchdir(fd)\n"
                "for _ in range(64): os.chdir('..')\nprint(sorted(os.listdir('.')) == "
                "sorted(os.listdir('/')), os.path.exists('.dockerenv'), "
                "os.path.exists('.intercode-root'))\n\"")
    assert r.output == "True False False\n", r.output


# -- resources: the agent's failure stays its own -----------------------------------------

def test_filling_every_writable_place_is_the_agents_outcome():
    """/, /dev/shm and /dev/mqueue filled; the sandbox answers and resets."""
    sb = _fresh("docker", storage=16 << 20, shm=8 << 20)
    try:
        r = sb.run("head -c 64M /dev/zero > /big 2>/dev/null; echo root=$?; "
                   "head -c 64M /dev/zero > /dev/shm/big 2>/dev/null; echo shm=$?; "
                   "python3 -c \"\nimport os\nn = 0\ntry:\n for i in range(100000):\n  "
                   "os.close(os.open('/dev/mqueue/q%d' % i, os.O_CREAT | os.O_WRONLY)); n += 1"
                   "\nexcept OSError as e: print('mq', e.errno)\nprint('mq files', n)\n\" "
                   "2>&1 | tail -1; echo done")
        assert "root=1" in r.output and "shm=1" in r.output and "done" in r.output, r.output
        sb.reset()
        assert sb.run("echo alive").output == "alive\n"
    finally:
        sb.close()


# A 464-byte static x86-64 program (GNU as, `ld -static -N -s`; what it does is in the
# comment below) that holds kernel memory the supervisor's resident-memory watch does not
# see: page tables (a 3.5 GiB read-only anonymous mapping read once every 2 MiB, so each
# read maps the shared zero page: no resident memory, one page-table page per 2 MiB, about
# 7 MiB in all) and pipe buffers (pipes filled until the descriptor limit). Its own
# resident memory is a few KiB.
#   mmap(0, 0xE0000000, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0)
#   for (p = base; p < end; p += 2 MiB) (void)*p;
#   while (pipe2(fds, O_NONBLOCK) == 0) write(fds[1], base, 65536);
#   for (;;) pause();
HOG = (
    "f0VMRgIBAQAAAAAAAAAAAAIAPgABAAAAeABAAAAAAABAAAAAAAAAABABAAAAAAAAAAAAAEAAOAABAEAA"
    "AwACAAEAAAAHAAAAeAAAAAAAAAB4AEAAAAAAAHgAQAAAAAAAgAAAAAAAAACAAAAAAAAAAAEAAAAAAAAA"
    "uAkAAAAx/0i+AAAA4AAAAAC6AQAAAEG6IkAAAEnHwP////9FMckPBUiJw0mJxEm9AAAA4AAAAABJAcVB"
    "igQkSYHEAAAgAE057HLwSIPsELglAQAASInnvgAIAAAPBYXAdRW4AQAAAIt8JARIid66AAABAA8F69i4"
    "IgAAAA8F6/cALnNoc3RydGFiAC50ZXh0AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAACwAAAAEAAAAHAAAAAAAAAHgAQAAAAAAA"
    "eAAAAAAAAACAAAAAAAAAAAAAAAAAAAAAAQAAAAAAAAAAAAAAAAAAAAEAAAADAAAAAAAAAAAAAAAAAAAA"
    "AAAAAPgAAAAAAAAAEQAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAA="
)


PAGE_TABLES_KIB = ("cat /proc/[0-9]*/status 2>/dev/null | awk '/^VmPTE/ {k += $2} "
                   "END {print k + 0}'")


def _hogs(sb, count: int) -> str:
    return sb.run(f"echo {''.join(HOG)} | base64 -d > /hog; chmod +x /hog; "
                  f"for i in $(seq {count}); do /hog & done; disown -a; sleep 3; "
                  + PAGE_TABLES_KIB).output


# Was a HOLE (docker only; fixed: the agent's processes live in a memory cgroup of their
# own below the container's, see inbox/oomguard.py): the container's memory cgroup counts
# kernel memory (page tables, pipe buffers) that the supervisor's watch (resident
# memory) does not, so the agent filled the cgroup with processes of a few KiB each, and
# the kernel's OOM killer then picked the largest process of the container: pid 1, the
# supervisor (19 MiB; seen in dmesg: "Memory cgroup out of memory: Killed process ...
# (python3)"). The host got SandboxError("sandbox supervisor exited"): status "error" for
# what the agent did. Reproducer: limits memory=256 MiB, storage=16 MiB, shm=8 MiB; the
# action starts 100 copies of HOG in the background; the next action failed.
@pytest.mark.skipif(platform.machine() != "x86_64", reason="HOG is x86-64 code")
def test_kernel_memory_past_the_cgroup_limit_never_kills_pid_1():
    sb = _fresh("docker", memory=256 << 20, storage=16 << 20, shm=8 << 20)
    try:
        _hogs(sb, 100)
        assert sb.run("echo alive").output == "alive\n"
    finally:
        sb.close()


# the process's memory cgroup: v1's memory line, else v2's
CGROUP = "grep -E '^[0-9]+:memory:' /proc/self/cgroup || grep '^0::' /proc/self/cgroup"
MEMORY_LINE = ("sorted(open('/proc/self/cgroup').read().splitlines(), "
               "key=lambda l: ':memory:' not in l)[0]")


def _in_agent_cgroup(line: str) -> bool:
    return line.strip().rsplit(":", 1)[-1].endswith("/agent")


# The guard above holds only if every process of the agent is in the agent's cgroup:
# the shell (also a restored one, whose prelude is the agent's shell state), the Python
# interpreter (and its spare), a command run to completion (upstream quirks), a program
# of another language, and what those start; and if none of them keeps the descriptor of
# the cgroup's procs file (with it the agent could move pid 1 into its own cgroup).
def test_every_process_of_the_agent_is_in_the_agent_cgroup():
    sb = _fresh("docker")
    try:
        assert _in_agent_cgroup(sb.run(CGROUP).output), sb.run(CGROUP).output
        assert _in_agent_cgroup(sb.run(f"(sleep 0.1; {CGROUP}) & wait").output)
        r = sb.exec(["/bin/sh", "-c", CGROUP], timeout=10)  # run to completion
        assert _in_agent_cgroup(r.output), r.output
        # a restored shell: its replay (the agent's shell state) runs after the join
        sb.tree_snapshot(7)
        sb.tree_restore(7, "/", replay="ls -l /proc/$$/fd/ > /tmp/replay-fds")
        assert _in_agent_cgroup(sb.run(CGROUP).output)
        held = sb.run("grep -c cgroup /tmp/replay-fds; ls -l /proc/self/fd/ /proc/$$/fd/ "
                      "| grep -c cgroup; for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null; "
                      "done | grep -c cgroup").output.split()
        assert held == ["0", "0", "0"], held
    finally:
        sb.close()


def test_the_python_interpreter_is_in_the_agent_cgroup():
    need("docker")
    sb = create_sandbox("docker", limits=Limits(timeout=20), shell="python")
    try:
        sb.start()
        sb.load(TREE)
        for _ in range(2):  # the first interpreter, then the spare a reset hands over
            r = sb.run("import os\n"
                       f"print({MEMORY_LINE}, "
                       "sum('cgroup' in os.readlink('/proc/self/fd/' + n) "
                       "for n in os.listdir('/proc/self/fd') "
                       "if os.path.exists('/proc/self/fd/' + n)))")
            line, held = r.output.split()
            assert _in_agent_cgroup(line) and held == "0", r.output
            sb.reset()
    finally:
        sb.close()


# a program of another language that speaks the shell protocol (see
# tests/contract/test_sandbox_contract.py): it answers every action with its cgroup and
# how many of its descriptors point into a cgroup file system
REPORTER = r"""
import os
def read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(63, n - len(data))
        if not chunk:
            raise SystemExit(0)
        data += chunk
    return data
while True:
    head = b""
    while not head.endswith(b"\n"):
        head += read(1)
    seq, length = head.split()[:2]
    read(int(length) + (1 if int(length) <= 4096 else 0))
    line = sorted(open("/proc/self/cgroup").read().splitlines(),
                  key=lambda l: ":memory:" not in l)[0]
    fds = [os.readlink("/proc/self/fd/" + n) for n in os.listdir("/proc/self/fd")
           if os.path.exists("/proc/self/fd/" + n)]
    os.write(1, ("%s %d" % (line, sum("cgroup" in f for f in fds))).encode())
    os.write(62, seq + b" 0 /\0")
"""


def test_a_program_of_another_language_is_in_the_agent_cgroup():
    need("docker")
    sb = create_sandbox("docker", limits=Limits(timeout=20),
                        shell=["/usr/bin/python3", "-c", REPORTER])
    try:
        sb.start()
        sb.load(TREE)
        line, held = sb.run("anything").output.split()
        assert _in_agent_cgroup(line) and held == "0", (line, held)
    finally:
        sb.close()


# Was a HOLE (both backends; fixed: the supervisor's watch counts VmPTE with VmRSS and
# kills the largest processes until the rest is within the limit): page
# tables and pipe buffers are memory the agent holds but its limit does not count: 100
# copies of HOG hold about 1 GiB of the host's memory (MemAvailable fell by 998 MiB) in a
# sandbox whose limit is 256 MiB, and nothing is killed (bubblewrap has no cgroup).
@pytest.mark.skipif(platform.machine() != "x86_64", reason="HOG is x86-64 code")
def test_page_tables_count_against_the_memory_limit():
    sb = _fresh("bwrap", memory=256 << 20)
    try:
        _hogs(sb, 100)  # (the watch may kill the shell of this action too)
        held_kib = int(sb.run(PAGE_TABLES_KIB).output.split()[-1])
        assert held_kib <= 256 << 10, f"{held_kib >> 10} MiB of page tables alone"
    finally:
        sb.close()


# -- per-user kernel quotas: one sandbox must not exhaust another's -------------------------

PER_USER = r'''
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
ino = 0
while ino < 1000 and libc.inotify_init1(0) >= 0:
    ino += 1
mq = 0
while mq < 1000 and rt.mq_open(b"/q%d" % mq, os.O_CREAT | os.O_RDWR, 0o600, None) >= 0:
    mq += 1
print("inotify", ino, "mqueue", mq, flush=True)
if sys.argv[1] == "hold":
    time.sleep(30)
'''


# Was a HOLE (both backends): inotify instances (fs.inotify.max_user_instances, 128) and
# POSIX message queue bytes (RLIMIT_MSGQUEUE, 800 KiB) are counted per user of the host's
# user namespace: uid 1000 for every docker sandbox, the host user that runs bubblewrap
# (``nobody`` here) for every bubblewrap sandbox. Reproducer: sandbox A runs PER_USER
# ("hold"): 128 inotify instances, ~10 queues; sandbox B then got 0 of each (EMFILE).
# The queues outlived A's processes (files of /dev/mqueue) until A's sandbox closed.
# Fixed: the seccomp filter denies inotify_init(1) and mq_open (ENOSYS; programs fall
# back), so what B gets no longer depends on what A holds.
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_per_user_kernel_quotas_are_not_shared_between_sandboxes(backend):
    a, b = _fresh(backend), _fresh(backend)
    try:
        for sb in (a, b):
            sb.run(f"cat > /tmp/q.py <<'EOF'\n{PER_USER}\nEOF")
        alone = b.run("python3 /tmp/q.py once").output
        assert alone.split()[:1] == ["inotify"], alone
        a.run("python3 /tmp/q.py hold > /tmp/a.out & sleep 2; disown -a")
        r = b.run("python3 /tmp/q.py once")
        assert r.output == alone, (alone, r.output)
        assert r.output.split() == ["inotify", "0", "mqueue", "0"]  # denied: no quota
        errno_text = b.run("python3 -c 'import ctypes, os; l = ctypes.CDLL(None, "
                           "use_errno=True); l.inotify_init1(0); "
                           "print(os.strerror(ctypes.get_errno()))'").output
        assert errno_text.strip() == "Function not implemented"
    finally:
        a.close()
        b.close()


XATTRS = r'''
import os, sys
total = 0
if sys.argv[1] == "fill":
    value = b"x" * 65000
    try:
        for f in range(128):
            open("/x%d" % f, "w").close()
            for i in range(8):
                os.setxattr("/x%d" % f, "user.a%d" % i, value)
    except OSError as e:
        print(e.strerror)
for name in os.listdir("/"):
    if name.startswith("x") and name[1:].isdigit():
        total += sum(len(os.getxattr("/" + name, a)) for a in os.listxattr("/" + name))
print(total >> 20)
'''


# Was a HOLE (both backends, bounded; fixed: the seccomp filter answers setxattr and its
# variants with EOPNOTSUPP, as a file system without xattrs does): user extended
# attributes on the root tmpfs are kernel
# memory outside the tmpfs's size (``df`` shows 4 KiB used); since Linux 6.6 tmpfs counts
# them against its inode space only, which the supervisor's files watch (100 000 by
# default, about 100 MiB of values) stops, not ``storage``. Reproducer: storage=16 MiB,
# the action stores 8 x 65 000-byte ``user.*`` attributes on each of 128 files: 63 MiB
# kept. On docker this eats the cgroup's margin for the supervisor (see above).
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_extended_attributes_count_against_storage(backend):
    sb = _fresh(backend, storage=16 << 20)
    try:
        sb.run(f"cat > /tmp/x.py <<'EOF'\n{XATTRS}\nEOF")
        sb.run("python3 /tmp/x.py fill")
        stored_mib = int(sb.run("python3 /tmp/x.py count").output.split()[-1])
        assert stored_mib <= 16, f"{stored_mib} MiB stored in extended attributes"
    finally:
        sb.close()


PTYS = r'''
import os, sys, time
n = 0
try:
    while n < 1000:
        os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
        n += 1
except OSError:
    pass
print("ptys", n, flush=True)
if sys.argv[1] == "hold":
    time.sleep(8)
'''


# Was a HOLE (both backends; the whole host): pseudo-terminals are counted host-wide
# (kernel.pty.max 4096, of which kernel.pty.reserve 1024 are for the initial devpts
# only): every container's and every bubblewrap sandbox's devpts shares 3072, and neither
# mounted its devpts with a ``max``. Reproducer: four background processes of sandbox A
# each open /dev/ptmx until ENOSPC (3072 in all); sandbox B's first open fails. Fixed:
# docker's pid 1 remounts the container's devpts with max=64 (inbox/newroot.py),
# bubblewrap's mounts its own with max=64 (inbox/privs.py; bwrap's --dev takes no options)
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_pseudo_terminals_of_one_sandbox_leave_others_theirs(backend):
    a, b = _fresh(backend), _fresh(backend)
    try:
        for sb in (a, b):
            sb.run(f"cat > /tmp/p.py <<'EOF'\n{PTYS}\nEOF")
        a.run("for i in 1 2 3 4; do python3 /tmp/p.py hold > /dev/null & done; sleep 3; "
              "disown -a")
        r = b.run("python3 /tmp/p.py once")
        assert int(r.output.split()[-1]) > 0, r.output
    finally:
        a.close()
        b.close()


THREADS = ("python3 -c 'import threading, time\n"
           "try:\n"
           "    for _ in range(300):\n"
           "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
           "except RuntimeError:\n"
           "    pass\n"
           "time.sleep(60)' & sleep 2; disown -a; echo held")


# Was a HOLE (docker only, fixed with the one above; its worst consequence): threads
# count in RLIMIT_NPROC but not in the supervisor's process alarm (it counts processes),
# so one action of the agent (a process with ~250 sleeping threads) takes every task of
# uid 1000 on the host: the gold's sandbox, a docker container too, then cannot start
# its shell to run the gold ("sandbox request 'load' failed: BlockingIOError: [Errno 11]
# Resource temporarily unavailable: '/bin/bash'"), a RewardError, status "error" for what
# the agent did. With other timing the gold's own forks fail instead: a wrong gold
# result, which the gold cache would keep for later runs.
@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_the_agent_cannot_starve_the_golds_sandbox_of_processes(backend):
    need(backend)
    from intercode.envs.bash import BashEnv

    env = BashEnv("nl2bash-fs1", backend=backend, gold_cache=False)
    try:
        env.reset(options={"task": 0})
        observation, *_ = env.step(THREADS)
        assert "held" in str(observation)
        evaluation = env.evaluate()
        assert evaluation.info["gold_exit_code"] == 0, evaluation.info
    finally:
        env.close()


# -- the supervisor's memory: snapshots of the agent's files ---------------------------

# HOLE: the supervisor keeps tree snapshots (the changed files' bytes) in its own memory,
# which counts in the container's cgroup beside the agent's, with 256 MiB of room. An
# agent that filled its tmpfs (500 MiB) and its memory limit (20 processes of 85 MiB,
# under the watchdog's 2 GiB) made a fork (the snapshot exported whole: joined, then
# framed) cost the supervisor about 1.4 GB: the kernel's OOM killer picked pid 1 (the
# largest process) and the host saw SandboxError("sandbox supervisor exited"), an
# infrastructure error. Now the snapshots pid 1 keeps have a budget (one copy of the
# agent's file systems), exports are written without a joined copy, and the container
# has room for both.
def test_snapshots_of_a_full_sandbox_never_get_the_supervisor_oom_killed():
    from intercode import testing
    from intercode.envs.bash import BashEnv

    need("docker")
    env = BashEnv(testing.small_dataset("bash"), backend="docker")
    try:
        env.reset(options={"task": 0})
        agent = env.unwrapped._sandbox("agent")
        out = agent.run(
            "head -c 500M /dev/zero > /big; export S=85; for i in $(seq 20); do python3 -c "
            "'import os, time; b = bytearray(int(os.environ[\"S\"]) << 20); "
            "b[::4096] = b\"x\" * len(b[::4096]); print(\"up\", flush=True); "
            "open(\"/tmp/up\" + str(os.getpid()), \"w\").close(); "
            "time.sleep(1e6)' & done; "
            # each says so once its memory is touched (a count of running jobs came before
            # that: under load some had not printed yet)
            "until [ $(ls /tmp | grep -c ^up) = 20 ]; do sleep 0.2; done; "
            "sleep 2; echo ready", timeout=120).output
        assert out.rstrip().endswith("ready") and out.count("up") == 20, out
        snap = env.snapshot()
        fork = env.fork()
        try:
            assert fork.step("wc -c < /big")[0].split()[0] == "524288000"
        finally:
            fork.close()
        assert env.step("echo alive")[0] == "alive\n"
        # another 500 MiB of changes: a second copy is past the budget, refused cleanly
        env.step("head -c 500M /dev/zero | tr '\\0' a > /big; echo done")
        with pytest.raises(SnapshotError, match="refused"):
            env.snapshot()
        assert env.step("echo alive")[0] == "alive\n"
        env.restore(snap)
        assert env.step("head -c 3 /big | od -An -c")[0].split()[:3] == ["\\0"] * 3
    finally:
        env.close()
