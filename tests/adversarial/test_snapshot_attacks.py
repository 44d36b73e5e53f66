"""Snapshots cannot be used to change a score, reach another session, or break the host.

A snapshot handle is host-side and opaque; the environment restores only handles it
issued in the current episode. The state a snapshot holds inside the sandbox (a tree
copy in the supervisor, a held interpreter, databases in the SQL engine) is the
agent's own: an agent that destroys it loses the restore (a clear SnapshotError), and
nothing it does there reaches the host or another session.
"""

from __future__ import annotations

import copy
import pickle
import time

import pytest

import intercode
from intercode import testing
from intercode.envs.snapshot import Snapshot
from intercode.errors import SandboxError, SnapshotError


def make(name: str):
    env = intercode.make(name, dataset=testing.small_dataset(name)).unwrapped
    env.reset(options={"task": 0})
    return env


@pytest.fixture(scope="module")
def sql():
    env = make("sql")
    yield env
    env.close()


def test_forged_copied_and_pickled_snapshots_are_refused(sql):
    sql.reset(options={"task": 0})
    real = sql.snapshot()
    forged = Snapshot.__new__(Snapshot)
    for name in Snapshot.__slots__:
        if name != "__weakref__":
            object.__setattr__(forged, name, object.__getattribute__(real, name))
    with pytest.raises(SnapshotError, match="released or belongs to an earlier episode"):
        sql.restore(forged)
    with pytest.raises(SnapshotError, match="not a snapshot taken by this environment"):
        sql.restore(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        copy.copy(real)
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        pickle.dumps(real)
    with pytest.raises(AttributeError, match="immutable"):
        real._turn = 0  # type: ignore[misc]
    sql.restore(real)  # the real one still works


def test_snapshots_of_another_environment_another_task_or_released_are_refused(sql):
    other = make("sql")
    try:
        foreign = other.snapshot()
        sql.reset(options={"task": 0})
        with pytest.raises(SnapshotError, match="not a snapshot taken by this environment"):
            sql.restore(foreign)
    finally:
        other.close()
    old = sql.snapshot()
    sql.reset(options={"task": 1})
    with pytest.raises(SnapshotError, match="released or belongs to an earlier episode"):
        sql.restore(old)
    released = sql.snapshot()
    released.release()
    with pytest.raises(SnapshotError):
        sql.restore(released)


def test_restore_gives_back_the_snapshots_score_not_a_later_one(sql):
    """A restore is the state of then: a solve after the snapshot does not survive it."""
    sql.reset(options={"task": 0})
    sql.step("SELECT 1")
    snap = sql.snapshot()
    low = sql.evaluate().reward
    sql.step(sql.task.gold)
    assert sql.evaluate().reward == 1.0
    sql.restore(snap)
    assert sql.evaluate().reward == low < 1.0


def test_an_agent_that_kills_its_held_interpreters_loses_the_restore_cleanly():
    env = make("python")
    try:
        env.step("secret = 41")
        snap = env.snapshot()
        kill = ("import os, signal\n"
                "for p in os.listdir('/proc'):\n"
                "    if p.isdigit() and int(p) not in (1, os.getpid()):\n"
                "        try: os.kill(int(p), signal.SIGKILL)\n"
                "        except OSError: pass\n")
        env.step(kill)
        with pytest.raises(SnapshotError, match="held interpreter is gone"):
            env.restore(snap)
        assert "2" in env.step("print(1 + 1)")[0]  # the episode goes on
    finally:
        env.close()


def test_an_agent_cannot_resume_a_held_interpreter_into_its_score():
    """SIGUSR1 to a held copy from inside makes one more process of the agent's (as
    os.fork could); the restore still gives the snapshot's state and the reward is
    decided in the gold's sandbox."""
    env = make("python")
    try:
        env.step("x = 1")
        snap = env.snapshot()
        poke = ("import os, signal\n"
                "for p in os.listdir('/proc'):\n"
                "    if p.isdigit() and int(p) not in (1, os.getpid()):\n"
                "        try: os.kill(int(p), signal.SIGUSR1)\n"
                "        except OSError: pass\n"
                "x = 2")
        env.step(poke)
        env.restore(snap)
        assert env.step("print(x)")[0].strip() == "1"
        assert env.evaluate().reward == 0.0  # nothing defined, nothing passes
    finally:
        env.close()


def test_a_forged_tree_import_cannot_write_outside_the_tree(sandbox_factory):
    box = sandbox_factory()
    try:
        for path in ("../etc/x", "/etc/x", "a/../../x", "a//b"):
            with pytest.raises(SandboxError, match="malformed entry"):
                box._request({"op": "tree_import", "id": 1,
                              "entries": [[path, "f", 0o644, 0, 1]]}, b"x")
    finally:
        box.close()


def test_an_imported_trees_restore_is_only_of_that_snapshot(sandbox_factory):
    """A fork's import carries the restore of the snapshot it imports (one request): a
    restore of another snapshot, or one that resumes a held interpreter, is refused."""
    box = sandbox_factory()
    try:
        box.start()
        for restore in ({"op": "tree_restore", "id": 2, "cwd": "/"},
                        {"op": "tree_restore", "id": 1, "cwd": "/", "pid": 1}, "x"):
            with pytest.raises(SandboxError, match=r"malformed (restore|request)"):
                box._request({"op": "tree_import", "id": 1, "entries": [["a", "f", 0o644, 0, 1]],
                              "restore": restore}, b"x")
    finally:
        box.close()


def test_the_snapshot_tree_copy_is_not_readable_from_the_sandbox():
    """The supervisor holds the copy in its memory; it is not dumpable, so the agent's
    shell cannot read it through /proc (a file deleted after the snapshot stays gone)."""
    env = make("bash")
    try:
        env.step("echo hidden > /tmp/s")
        snap = env.snapshot()
        env.step("rm /tmp/s")
        obs = env.step("cat /proc/1/mem 2>&1 | head -c 100; grep -l hidden /proc/1/environ "
                       "/proc/1/cmdline 2>&1 | head -3; echo done")[0]
        assert "hidden" not in obs.replace("/tmp/s", "")
        env.restore(snap)
        assert env.step("cat /tmp/s")[0] == "hidden\n"
    finally:
        env.close()


def test_a_restored_shell_state_cannot_hijack_the_shell_loop():
    """A restore's shell starts with the snapshot's state replayed on the loop's own line
    (inbox/shell.py PRELUDE): aliases of the loop's words, a function named ``set`` and
    tracing do not break the loop or leak into the next observation."""
    env = make("bash")
    try:
        env.step("shopt -s expand_aliases; alias read='echo pwned' printf=false eval=exit "
                 "while=until; set() { echo hijacked; }; X=kept")
        snap = env.snapshot()
        env.restore(snap)
        obs = env.step("echo ok $X")[0]
        assert obs == "ok kept\n"
        assert "read='echo pwned'" in env.step("alias")[0]
    finally:
        env.close()


def test_a_shell_state_too_big_for_an_argument_is_replayed_after_the_restore():
    env = make("bash")
    try:
        env.step("BIG=$(head -c 150000 /dev/zero | tr '\\0' a); echo ${#BIG}")
        snap = env.snapshot()
        env.step("BIG=small")
        env.restore(snap)
        assert env.step("echo ${#BIG}")[0] == "150000\n"
    finally:
        env.close()


def test_the_agent_cannot_see_or_reach_the_fork_spare():
    """The warm spare of fork() (a sibling begun for the next fork) is a sandbox of its
    own: the agent's process list does not change when it exists, and killing every
    process the agent can see leaves it whole (the next fork uses it and works)."""
    env = make("bash")
    # counted by the shell itself (a pipeline's right side may not have started yet)
    count = "n=0; for p in /proc/[0-9]*; do n=$((n + 1)); done; echo $n"
    try:
        env.step("echo parent > /tmp/f")
        before = env.step(count)[0]
        env.fork().close()
        assert env._spares.pending
        spare = env._spares.pending[0].result()
        assert spare is not None
        spare._agent.start()  # booted: its processes run now
        assert env.step(count)[0] == before
        env.step("kill -9 -1")  # everything the agent can signal
        assert spare._agent.alive
        fork = env.fork()
        try:
            assert fork is spare
            assert fork.step("cat /tmp/f")[0] == "parent\n"
        finally:
            fork.close()
    finally:
        env.close()


def test_a_big_tree_and_busy_processes_do_not_time_out_a_snapshot():
    """The shell's capture runs while the supervisor copies the tree; the copy's time
    once counted against the capture's action time limit, so an agent with a big tree
    and a few busy background processes made every snapshot fail (a timed-out capture,
    its background processes killed)."""
    from intercode.envs.bash import BashEnv
    from intercode.sandbox.limits import Limits

    env = BashEnv(testing.small_dataset("bash"), limits=Limits(timeout=0.5))
    try:
        env.reset(options={"task": 0})
        # the set-up gets time of its own (writing 400 MB under a loaded CI machine can take
        # longer than the half second), so only the snapshot runs under the short limit
        obs = env.unwrapped._sandbox("agent").run(
            "mkdir -p /tmp/big && for i in 1 2 3 4; do "
            "head -c 100000000 /dev/zero > /tmp/big/f$i; done; "
            "for i in 1 2 3 4; do (while :; do :; done) & done; disown -a; "
            "echo ready", timeout=60).output
        assert obs.strip() == "ready", obs
        snap = env.snapshot()
        env.step("rm -rf /tmp/big")
        env.restore(snap)
        assert env.step("ls /tmp/big | wc -l")[0].split()[0] == "4"
    finally:
        env.close()


def test_a_held_copy_reported_with_an_absurd_pid_is_a_snapshot_error():
    """The held copy's pid comes back through the agent's own interpreter, which it can
    patch: a pid of 1e999 (JSON's infinity) raised OverflowError, not a SnapshotError."""
    env = make("python")
    try:
        env.step("import json\njson.dumps = lambda *a, **k: '{\"pid\": 1e999}'")
        with pytest.raises(SnapshotError, match="did not hold a copy"):
            env.snapshot()
        assert "2" in env.step("print(1 + 1)")[0]  # the episode goes on
    finally:
        env.close()


# A background process maps a file shared and writable and writes it once (the write
# fault sets the file's ctime; the page stays writable), then, after the snapshot, writes
# it again through the same mapping: no fault, so no new ctime. ``undumpable``: the
# process hides its mappings from the supervisor (``PR_SET_DUMPABLE`` 0).
MMAP_WRITER = r'''cat > /tmp/w.py <<'P'
import ctypes, mmap, os, sys, time
if sys.argv[1] == "undumpable":
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
fd = os.open("/tmp/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"AAAA")
m = mmap.mmap(fd, 4)
m[0:4] = b"AAAA"
open("/tmp/mapped", "w").close()
while not os.path.exists("/tmp/go"):
    time.sleep(0.01)
m[0:4] = b"BBBB"
open("/tmp/done", "w").close()
time.sleep(1e6)
P
python3 /tmp/w.py %s & until [ -e /tmp/mapped ]; do sleep 0.05; done; cat /tmp/f'''


@pytest.mark.parametrize("mode", ["dumpable", "undumpable"])
def test_a_write_through_a_live_mapping_does_not_survive_a_restore(mode):
    """A restore trusted every file the snapshot had read whose inode and ctime were
    unchanged (neither compared nor written again); a write through a shared mapping
    made before the snapshot changes neither, so a change made after the snapshot (a
    solve in another branch) survived the restore to it. The files mapped shared and
    writable when the snapshot is taken are now never trusted, and all are when a
    process's mappings cannot be read."""
    env = make("bash")
    try:
        assert env.step(MMAP_WRITER % mode)[0] == "AAAA"
        snap = env.snapshot()
        out = env.step("touch /tmp/go; until [ -e /tmp/done ]; do sleep 0.05; done; "
                       "cat /tmp/f")[0]
        assert out == "BBBB", out
        env.restore(snap)
        assert env.step("cat /tmp/f")[0].startswith("AAAA")
    finally:
        env.close()


# Run in the agent's interpreter after the snapshot: the later "solve" (``f`` returning
# "new", in a file the restore removes) is pushed into the held copy of the snapshot.
FIND_HELD = ("import os, signal, time\nme = os.getpid()\n"
             "held = [int(n) for n in os.listdir('/proc') if n.isdigit() and int(n) != me\n"
             "        and open('/proc/%s/stat' % n).read().rsplit(')', 1)[1].split()[1]"
             " == str(me)]\n")
INTO_HELD = {
    # a handler of the agent's, inherited by the copy, runs its code there
    "a signal handler": FIND_HELD + "for p in held: os.kill(p, signal.SIGUSR2)\n",
    # the copy was dumpable: its memory written (the small int 2 made 3)
    "its memory": FIND_HELD + "for p in held:\n"
                  "    try:\n"
                  "        with open('/proc/%d/mem' % p, 'r+b', buffering=0) as m:\n"
                  "            m.seek(id(2) + 24); m.write((3).to_bytes(4, 'little'))\n"
                  "    except OSError: pass\n",
    # the agent's own SIGUSR1 resumed it (then the handler of the new interpreter ran)
    "a resume of its own": FIND_HELD + "for p in held: os.kill(p, signal.SIGUSR1)\n"
                           "time.sleep(0.2)\n"
                           "for n in os.listdir('/proc'):\n"
                           "    if n.isdigit() and int(n) not in (1, me):\n"
                           "        try: os.kill(int(n), signal.SIGUSR2)\n"
                           "        except OSError: pass\n",
}


@pytest.mark.parametrize("way", sorted(INTO_HELD))
def test_a_later_state_cannot_be_pushed_into_a_held_interpreter(way):
    """The held copy of a Python snapshot ran the agent's code before the restore (a
    signal handler it inherited) and could be traced or written (it was dumpable): the
    restore of the snapshot then gave a later state (``f()`` was ``'new'``). The copy now
    ignores every signal but the supervisor's SIGUSR1, collects no garbage and is not
    dumpable until it is resumed."""
    env = make("python")
    try:
        env.step("def f():\n    return 'old'\n")
        env.step("import signal\nsignal.signal(signal.SIGUSR2, lambda *a: exec(\n"
                 "    open('/tmp/sol.py').read(), globals()))")
        snap = env.snapshot()
        env.step("open('/tmp/sol.py', 'w').write(\"def f():\\n    return 'new'\\n\")")
        env.step(INTO_HELD[way] + "time.sleep(0.3)\nprint(held)")
        env.restore(snap)
        assert env.step("f()")[0] == "'old'\n"
        assert env.step("1 + 1")[0] == "2\n"
        # the agent's own handlers are the restored interpreter's again
        assert env.step("signal.getsignal(signal.SIGUSR2) is not signal.SIG_DFL")[0] == "True\n"
    finally:
        env.close()


@pytest.mark.parametrize("forged", ['\'{"ran": 1e999}\'', "'[' * 100000", "'{\"ran\": \"all\"}'"])
def test_a_patched_interpreter_cannot_break_a_forks_replay(forged):
    """A fork replays the episode's actions in one ``replay`` request whose reply (how
    many ran) comes back through the agent's own interpreter, which it can patch: a
    forged count (infinite, a string), a reply nested past the parser's depth. Each is
    a replay not known to be whole: the fork replays one by one from a fresh
    interpreter, in the parent's state; nothing raises on the host."""
    env = make("python")
    env.fork_spares = 0
    try:
        env.step("L = ['a']")
        env.step(f"import json\njson.dumps = lambda *a, **k: {forged}")
        env.step("L.append('b')")
        fork = env.fork()
        try:
            assert fork.step("print(L)")[0] == "['a', 'b']\n"
        finally:
            fork.close()
    finally:
        env.close()


# Was a HOLE on bubblewrap: the supervisor kept every live tree snapshot's changed files
# in its memory with no bound (Docker's had one): an agent that rewrote a big file
# between snapshots made the harness's snapshots hold one more copy each, host memory
# without limit. Both backends now keep at most one copy of the writable file systems.
def test_live_tree_snapshots_have_a_memory_budget():
    """Live snapshots together keep at most one copy of the agent's writable file systems
    (storage + ``/dev/shm``): past it a snapshot is refused with a one-line
    ``SnapshotError``, the episode goes on, and the snapshots kept still restore; a
    released one frees its share."""
    from intercode.envs.bash import BashEnv
    from intercode.sandbox.limits import Limits

    env = BashEnv(testing.small_dataset("bash"), limits=Limits(storage=24 << 20, shm=4 << 20))
    try:
        env.reset(options={"task": 0})
        env.step("head -c 20M /dev/zero > /big; echo ok")
        first = env.snapshot()
        env.step("head -c 20M /dev/zero | tr '\\0' a > /big; echo ok")
        with pytest.raises(SnapshotError, match="refused") as caught:
            env.snapshot()
        assert "\n" not in str(caught.value)
        assert env.step("echo alive")[0] == "alive\n"
        env.restore(first)
        assert env.step("head -c 3 /big | od -An -c")[0].split()[:3] == ["\\0"] * 3
        env.step("head -c 20M /dev/zero | tr '\\0' b > /big; echo ok")
        first.release()
        second = env.snapshot()  # the released snapshot's copy no longer counts
        env.step("rm /big")
        env.restore(second)
        assert env.step("head -c 3 /big")[0] == "bbb"
    finally:
        env.close()


# The agent's interpreter rewrites ``pyhold.hold`` (its module's globals, found through
# ``gc``): a snapshot's hold forks a process of the agent's that appends to a file every
# 10 ms and reports it as the held copy (a child of the interpreter, as a real one is).
FAKE_HELD = r'''
import gc, os, time
def fake(flush):
    pid = os.fork()
    if pid == 0:
        while True:
            with open("/tmp/beat", "a") as f:
                f.write(".")
            time.sleep(0.01)
    return pid
for d in gc.get_objects():
    if isinstance(d, dict) and "_sibling" in d and "hold" in d:
        d["hold"] = fake
'''


# Was a HOLE (both backends): the freezer counted a registered held copy as idle when it
# was asleep (``S``), which the agent's process reported as held was between its writes:
# nothing was stopped, and it went on writing between actions, while the agent thinks.
def test_a_fake_held_copy_does_not_run_between_actions():
    """A held copy counts as idle only when the kernel says it is stopped: the freezer
    stops it (a real one waits the same, stopped); a process reported as held by a
    patched interpreter writes nothing between two actions."""
    env = make("python")
    try:
        env.step(FAKE_HELD)
        env.snapshot()
        # the writer may not have written yet on a loaded machine: no file counts as 0
        count = ("import os, time; time.sleep(0.05); "
                 "print(len(open('/tmp/beat').read()) if os.path.exists('/tmp/beat') else 0)")
        before = int(env.step(count)[0])
        time.sleep(3.0)
        after = int(env.step(count)[0])
        # a running writer adds about 300 in the pause (and some 10 in each action); a
        # freeze late by a second on a loaded machine still stays below the bound
        assert after - before < 150, (before, after)
    finally:
        env.close()


# Was a HOLE (both backends): a restore continued every held copy (the kill round and the
# wake-up), so a process the agent's interpreter reported as the held copy of one branch
# ran on in the branch restored after it, writing into a tree that should be the
# snapshot's: one branch's actions reached another's.
@pytest.mark.parametrize("act", [False, True], ids=["restored-at-once", "after-an-action"])
def test_a_fake_held_copy_does_not_run_in_another_branch(act):
    """Held copies stay stopped until their own snapshot is restored: after going back to
    an earlier snapshot, a process reported as the later snapshot's held copy writes
    nothing into the restored tree, during a pause or the next actions."""
    env = make("python")
    try:
        branch = env.snapshot()
        env.step(FAKE_HELD)
        later = env.snapshot()  # its held copy is the agent's writer (kept: not dropped)
        if act:
            env.step("import time; time.sleep(0.1)")
        env.restore(branch)
        time.sleep(1.0)
        probe = "import os, time; time.sleep(0.2); print(os.path.exists('/tmp/beat'))"
        assert env.step(probe)[0].strip() == "False"
        assert env.step(probe)[0].strip() == "False"
        del later
    finally:
        env.close()


def test_a_snapshot_is_copied_only_between_sandboxes_of_one_docker_or_bwrap_backend():
    """The backends lay their trees out differently: a snapshot of a bubblewrap sandbox
    is never imported into a docker one, nor the other way, whatever the call."""
    from backends import need

    from intercode.sandbox.bwrap import BwrapSandbox
    from intercode.sandbox.docker import DockerSandbox
    from intercode.sandbox.filetree import FileTree

    need("docker")
    # the classes themselves: --sandbox-backend puts every create_sandbox on one backend
    boxes = {"bwrap": BwrapSandbox(), "docker": DockerSandbox()}
    try:
        for box in boxes.values():
            box.start()
            box.load(FileTree.of([]))
            box.run("echo kept > /tmp/s")
            box.tree_snapshot(1)
        for source, target in (("bwrap", "docker"), ("docker", "bwrap")):
            with pytest.raises(SnapshotError, match=f"only to another {source} sandbox"):
                boxes[source].tree_copy(1, boxes[target], 2)
            with pytest.raises(SnapshotError, match=f"only to another {source} sandbox"):
                boxes[source].tree_copy_restore(1, boxes[target], 2, "/")
        for box in boxes.values():  # a copy within one backend still works
            twin = type(box)()
            try:
                twin.start()
                twin.load(FileTree.of([]))
                box.tree_copy_restore(1, twin, 5, "/")
                assert twin.run("cat /tmp/s").output == "kept\n"
            finally:
                twin.close()
    finally:
        for box in boxes.values():
            box.close()


# Was a HOLE (found by review): the supervisor did not read the mappings of the held
# copies (a real one is not dumpable), so a process of the agent's, reported as the held
# copy of one snapshot, hid its shared writable mapping from the next snapshot, which
# trusted the file's record; a write through the mapping then survived the restore.
WRITER_PROGRAM = MMAP_WRITER.split("<<'P'\n", 1)[1].split("\nP\n", 1)[0]
FAKE_HELD_MAPPER = f"""
import gc, os, subprocess, time
open("/tmp/w.py", "w").write({WRITER_PROGRAM!r})
W = subprocess.Popen(["python3", "/tmp/w.py", "dumpable"]).pid
while not os.path.exists("/tmp/mapped"):
    time.sleep(0.01)
for d in gc.get_objects():
    if isinstance(d, dict) and "_sibling" in d and "hold" in d:
        real, first = d["hold"], [True]
        def fake(flush, _real=real, _first=first):
            if _first[0]:  # the first snapshot's "held copy" is the writer
                _first[0] = False
                flush()
                return W
            time.sleep(0.2)  # a real copy, once the supervisor has read the mappings
            return _real(flush)
        d["hold"] = fake
"""


def test_a_fake_held_copys_mapping_does_not_survive_a_restore():
    env = make("python")
    try:
        env.step(FAKE_HELD_MAPPER)
        first = env.snapshot()  # its "held copy" is the writer
        time.sleep(0.1)  # the file's ctime is old enough to be trusted
        snap = env.snapshot()
        # continued again and again: a freeze still on its way when the action starts
        # stops the "held copy" again, and a thaw leaves held copies stopped
        out = env.step("import os, signal, time\nopen('/tmp/go', 'w').close()\n"
                       "while not os.path.exists('/tmp/done'):\n"
                       "    os.kill(W, signal.SIGCONT); time.sleep(0.01)\n"
                       "print(open('/tmp/f').read())")[0]
        assert out.strip() == "BBBB"
        env.restore(snap)
        assert env.step("print(open('/tmp/f').read())")[0].strip() == "AAAA"
        del first
    finally:
        env.close()
