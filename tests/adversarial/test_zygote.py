"""Python: the next episode's interpreter holds nothing of an earlier episode.

The spare interpreter (the next episode's) was forked from the supervisor, pid 1, and
inherited its whole memory: the tree snapshots (file contents of earlier episodes,
reachable from the interpreter's own stack frames), the freed bytes of files pid 1 read
at resets, and on Docker the frames its relay thread carried. Interpreters are now
forked from a zygote that pid 1 forks at boot, before any episode (``inbox/zygote.py``).

The scan reads the interpreter's own private writable memory (``/proc/self/mem``) for a
marker written in an earlier episode. The episode that scans never holds the marker
itself: it looks for a short prefix and compares a hash of what follows.
"""

from __future__ import annotations

import hashlib
import secrets

import pytest
from backends import backends, need

from intercode.envs.python import PythonEnv
from intercode.errors import SandboxError, SnapshotError

PREFIX = b"ZYGMARK-"

# the agent's code: the pids of pid 1's children other than this interpreter in `kids`
CHILDREN_OF_PID1 = r'''
kids = []
for n in os.listdir('/proc'):
    if n.isdigit() and int(n) not in (1, me):
        st = open('/proc/%s/stat' % n).read()
        if st[st.rfind(')') + 2:].split()[1] == '1':
            kids.append(int(n))
'''

# kill the newest child of pid 1 other than this interpreter: the spare (the zygote,
# forked at boot, is older), so that pid 1 makes a new one after what came before
KILL_SPARE = r'''
import os, signal, time
me = os.getpid()
''' + CHILDREN_OF_PID1 + r'''if kids:
    os.kill(max(kids), signal.SIGKILL)
time.sleep(0.3)
print('killed', len(kids) > 0)
'''

# several rounds: a spare the zygote was forking when it was killed becomes pid 1's child
# only once the zygote is gone (seen on a loaded machine: one round missed it, and the
# next interpreter came from that spare)
KILL_ALL = r'''
import os, signal, time
me = os.getpid()
for _ in range(6):
    for n in os.listdir('/proc'):
        if n.isdigit() and int(n) not in (1, me):
            try:
                st = open('/proc/%s/stat' % n).read()
            except OSError:
                continue
            if st[st.rfind(')') + 2:].split()[1] == '1':
                try:
                    os.kill(int(n), signal.SIGKILL)
                except ProcessLookupError:
                    pass
    time.sleep(0.05)
'''

SCAN = r'''
import hashlib, sys
prefix, target, size = bytes.fromhex(%r), %r, %d
hits = 0
with open('/proc/self/maps') as f:
    maps = f.read().splitlines()
with open('/proc/self/mem', 'rb', buffering=0) as mem:
    for line in maps:
        fields = line.split()
        if fields[1][1] != 'w' or fields[1][3] != 'p' or fields[-1] in ('[vvar]', '[vsyscall]'):
            continue
        lo, hi = (int(x, 16) for x in fields[0].split('-'))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except OSError:
            continue
        at = data.find(prefix)
        while at >= 0:
            if hashlib.sha256(data[at:at + size]).hexdigest() == target:
                hits += 1
            at = data.find(prefix, at + 1)
        del data
snaps = 0
f = sys._getframe()
while f is not None:
    for v in list(f.f_locals.values()):
        for ident, (state, reads) in dict(getattr(v, 'tree_snaps', None) or {}).items():
            for rel, value in state.items():
                if isinstance(value[3], bytes) and prefix in value[3]:
                    snaps += 1
    f = f.f_back
print('hits', hits, 'snaps', snaps)
'''


def _marker() -> tuple[str, str, str]:
    """``(marker, scan action, file write action)``."""
    marker = PREFIX.decode() + secrets.token_hex(12)
    digest = hashlib.sha256(marker.encode()).hexdigest()
    scan = SCAN % (PREFIX.hex(), digest, len(marker))
    # the marker in clear in the action too: Docker's relay in pid 1 carries it
    write = f"open('/tmp/zyg', 'w').write({marker!r} * 64)"
    return marker, scan, write


@pytest.mark.parametrize("backend", backends())
def test_an_earlier_episodes_files_are_not_in_the_next_interpreter(backend):
    """A file of episode 1, held by a snapshot (and read by pid 1 at the reset), is
    nowhere in episode 2's interpreter: not in its memory, not reachable from its frames.
    (The spare forked from pid 1 after the snapshot held it: ``LEAK`` by the red team.)"""
    need(backend)
    env = PythonEnv("mbpp", backend=backend)
    try:
        _marker_text, scan, write = _marker()
        env.reset(options={"task": 0})
        env.step(write)
        env.snapshot()
        assert env.step(KILL_SPARE)[0] == "killed True\n"
        env.reset(options={"task": 1})
        assert env.step(scan)[0] == "hits 0 snaps 0\n"
        # without a snapshot: the bytes pid 1 read at the reset (freed, not cleared)
        _marker_text, scan, write = _marker()
        env.step(write)
        env.step("import time; time.sleep(0.2)")
        env.reset(options={"task": 0})
        assert env.step(KILL_SPARE)[0] == "killed True\n"
        env.reset(options={"task": 1})
        assert env.step(scan)[0] == "hits 0 snaps 0\n"
    finally:
        env.close()


@pytest.mark.parametrize("backend", backends())
def test_killing_the_zygote_costs_a_new_sandbox_not_an_error(backend):
    """The agent (same user) can kill the zygote and the spare: the next reset still gives
    a working, clean interpreter (a new sandbox), scoring works, nothing is an error."""
    need(backend)
    env = PythonEnv("mbpp", backend=backend, test_timeout=1.0)
    try:
        _marker_text, scan, write = _marker()
        env.reset(options={"task": 0})
        env.step(write)
        env.step(KILL_ALL)
        assert env.step("1 + 1")[0] == "2\n"  # this episode's interpreter goes on
        _, reward, done, _, info = env.step("submit min_cost")
        assert done and reward == 0.0 and "error" not in info, info
        env.reset(options={"task": 1})
        assert env.step("1 + 1")[0] == "2\n"
        assert env.step(scan)[0] == "hits 0 snaps 0\n"
        env.step(KILL_ALL)
        env.reset(options={"task": 0})
        env.reset(options={"task": 0})
        assert env.step("1 + 1")[0] == "2\n"
        _, reward, done, _, info = env.step("def min_cost(*a):\n    return 0\n")
        _, reward, done, _, info = env.step("submit min_cost")
        assert done and reward == 0.0 and info.get("tests_correct") == 0, info
        # mid-episode: the zygote and the spare killed, then the interpreter itself: no
        # interpreter can be made in this sandbox; the action says so, the next one runs
        # in a new sandbox, and scoring is the agent's failure, not an error
        env.reset(options={"task": 0})
        env.step(KILL_ALL)
        out, _, _, _, info = env.step("import os; os._exit(0)")
        assert "could not be restarted" in out and info["shell_restarted"], (out, info)
        assert env.step("1 + 1")[0] == "2\n"
        assert env.step(scan)[0] == "hits 0 snaps 0\n"
        env.step(KILL_ALL)
        env.step("import os; os._exit(0)")
        _, reward, done, _, info = env.step("submit min_cost")
        assert done and reward == 0.0 and info.get("tests_correct") == 0, info
        env.reset(options={"task": 1})
        assert env.step("1 + 1")[0] == "2\n"
    finally:
        env.close()


ZYGOTE_ACCESS = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
me = os.getpid()
out = []
''' + CHILDREN_OF_PID1 + r'''zygote = min(kids)
for mode in ('rb', 'r+b'):
    try:
        with open('/proc/%d/mem' % zygote, mode, buffering=0) as m:
            m.seek(id(None))
            m.read(8)
        out.append('mem-%s-ok' % mode)
    except OSError as e:
        out.append('mem-%s-denied' % mode)
try:
    open('/proc/%d/environ' % zygote, 'rb').read()
    out.append('environ-ok')
except OSError:
    out.append('environ-denied')
out.append('ptrace-ok' if libc.ptrace(16, zygote, 0, 0) == 0 else 'ptrace-refused')
print(len(kids), ' '.join(out))
'''


@pytest.mark.parametrize("backend", backends())
def test_the_agent_cannot_read_or_trace_the_zygote(backend):
    """The zygote runs as the agent's user: it is not dumpable, so its memory cannot be
    read or written nor the process traced."""
    need(backend)
    env = PythonEnv("mbpp", backend=backend)
    try:
        env.reset(options={"task": 0})
        env.step("import time; time.sleep(0.2)")  # the spare is there too
        out = env.step(ZYGOTE_ACCESS)[0]
        assert out == "2 mem-rb-denied mem-r+b-denied environ-denied ptrace-refused\n", out
        env.reset(options={"task": 1})
        assert env.step("1 + 1")[0] == "2\n"
    finally:
        env.close()


LIMITS = ("import resource\nprint([resource.getrlimit(getattr(resource, 'RLIMIT_' + n)) "
          "for n in ('NPROC', 'CPU', 'NOFILE', 'AS', 'FSIZE', 'STACK')])")

PRLIMIT_ALL = r'''
import os, resource, time
time.sleep(0.2)
me = os.getpid()
done = 0
for n in os.listdir('/proc'):
    if n.isdigit() and int(n) not in (1, me):
        st = open('/proc/%s/stat' % n).read()
        if st[st.rfind(')') + 2:].split()[1] == '1':
            try:
                resource.prlimit(int(n), resource.RLIMIT_CPU, (1, 1))
                resource.prlimit(int(n), resource.RLIMIT_NOFILE, (7, 7))
                done += 1
            except PermissionError:  # refused by the seccomp filter
                pass
print(done)
'''


@pytest.mark.parametrize("backend", backends())
def test_the_next_interpreters_limits_cannot_be_lowered_from_inside(backend):
    """``prlimit`` needs only the same user: the agent lowered the limits of the spare
    (the next episode's interpreter got one second of CPU time and 7 descriptors) and
    could do the same to the zygote (every later spare). A spare whose limits differ
    from the supervisor's is not used, a zygote whose limits differ costs a new sandbox."""
    need(backend)
    env = PythonEnv("mbpp", backend=backend)
    try:
        env.reset(options={"task": 0})
        first = env.step(LIMITS)[0]
        assert int(env.step(PRLIMIT_ALL)[0]) == 0  # not the spare, not the zygote
        env.reset(options={"task": 1})
        assert env.step(LIMITS)[0] == first
        env.step("import time; time.sleep(0.2)")
        env.reset(options={"task": 1})
        assert env.step(LIMITS)[0] == first
    finally:
        env.close()


# the agent's interpreter replaces what it calls on a snapshot's hold: it exits instead
EXIT_ON_HOLD = r'''
import gc, os
for d in gc.get_objects():
    if isinstance(d, dict) and "_sibling" in d and "hold" in d:
        d["hold"] = lambda flush: os._exit(0)
'''


@pytest.mark.parametrize("backend", backends())
def test_a_snapshot_after_the_zygote_and_the_interpreter_died_is_a_snapshot_error(backend):
    """The agent kills the zygote and the spare, then its interpreter dies at the
    snapshot's hold: no interpreter can be made in that sandbox any more. The snapshot
    fails with a one-line ``SnapshotError`` (never the sandbox's own error), the episode
    goes on in a new sandbox, scoring is the agent's outcome; a fork whose replay does
    the same gets a working interpreter."""
    need(backend)
    env = PythonEnv("mbpp", backend=backend, test_timeout=1.0)
    try:
        env.reset(options={"task": 0})
        env.step("x = 41")
        env.step(KILL_ALL)
        env.step(EXIT_ON_HOLD)
        with pytest.raises(SnapshotError, match="new sandbox") as caught:
            env.snapshot()
        assert not isinstance(caught.value, SandboxError)
        assert env.step("1 + 1")[0] == "2\n"
        _, reward, done, _, info = env.step("submit min_cost")
        assert done and reward == 0.0 and "error" not in info, info
        # a fork replays the episode's actions in one request: these kill the zygote and
        # then the interpreter, in the fork's sandbox
        env.reset(options={"task": 0})
        env.step("y = 2")
        env.step(KILL_ALL)
        env.step("import os; os._exit(0)")
        other = env.fork()
        try:
            assert other.step("1 + 1")[0] == "2\n"
            _, reward, done, _, info = other.step("submit min_cost")
            assert done and reward == 0.0 and "error" not in info, info
        finally:
            other.close()
    finally:
        env.close()
