"""A process whose first thread exited (``syscall(SYS_exit)``) while another runs on.

``/proc/<pid>/stat`` then says ``Z`` and ``/proc/<pid>/maps`` is empty: the supervisor
took such a process for a zombie (not running, nothing to stop or kill, no mapping),
and its thread survived a Python reset, ran while the sandbox was frozen, and wrote
through a shared mapping that a snapshot's restore then trusted. And a thread the agent's
interpreter starts ran while the sandbox was frozen: only the first thread was seen
waiting for the next action.
"""
from __future__ import annotations

import time

import pytest

import intercode
from intercode import testing

# as test_snapshot_attacks.py's writer through a mapping, but its first thread exits
# (SYS_exit, 60 on x86-64) once the writer thread is started
ZOMBIE_WRITER = r'''cat > /tmp/w.py <<'P'
import ctypes, mmap, os, threading, time
fd = os.open("/tmp/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"AAAA")
m = mmap.mmap(fd, 4)
m[0:4] = b"AAAA"
time.sleep(0.1)  # the ctime is older than TRUST_NS when the snapshot looks
def worker():
    while not os.path.exists("/tmp/go"):
        time.sleep(0.01)
    m[0:4] = b"BBBB"
    open("/tmp/done", "w").close()
    time.sleep(1e6)
threading.Thread(target=worker).start()
HIDE
open("/tmp/mapped", "w").close()
ctypes.CDLL(None).syscall({'x86_64': 60, 'aarch64': 93}[os.uname().machine], 0)
P
python3 /tmp/w.py & until [ -e /tmp/mapped ]; do sleep 0.05; done; sleep 0.2; cat /tmp/f; echo; P=$!; echo state=$(cut -d" " -f3 /proc/$P/stat) maps=$(wc -c < /proc/$P/maps)'''


def make(name):
    env = intercode.make(name, dataset=testing.small_dataset(name)).unwrapped
    env.reset(options={"task": 0})
    return env


# not dumpable as well: its live thread's mappings cannot be read either
HIDE_MAPS = "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)"


@pytest.mark.parametrize("hide", ["", HIDE_MAPS], ids=["dumpable", "not-dumpable"])
def test_a_hidden_threads_write_through_a_mapping_does_not_survive_a_restore(hide):
    env = make("bash")
    try:
        out = env.step(ZOMBIE_WRITER.replace("HIDE", hide))[0]
        assert out.startswith("AAAA"), out
        snap = env.snapshot()
        out = env.step("touch /tmp/go; until [ -e /tmp/done ]; do sleep 0.05; done; cat /tmp/f")[0]
        assert out == "BBBB", out
        env.restore(snap)
        after = env.step("cat /tmp/f")[0]
        assert after.startswith("AAAA"), f"a later write survived the restore: {after!r}"
    finally:
        env.close()


EXIT_FIRST_THREAD = "ctypes.CDLL(None).syscall({'x86_64': 60, 'aarch64': 93}[os.uname().machine], 0)"


def written(path, value):
    """Python that writes ``value`` into ``path`` at once (a reader never sees the file
    empty, as between the truncation and the write of ``open(path, "w")``)."""
    return f"open('{path}.new', 'w').write({value}); os.replace('{path}.new', '{path}')"


def hidden_thread(path, body):
    """Bash that writes ``path``: a Python program whose second thread runs ``body`` (``n``
    counts its rounds) every 50 ms, once its first thread has exited."""
    return (f"cat > {path} <<'P'\nimport ctypes, os, threading, time\ndef worker():\n"
            f"    n = 0\n    while True:\n        n += 1\n        {body}\n"
            f"        time.sleep(0.05)\nthreading.Thread(target=worker).start()\n"
            f"{EXIT_FIRST_THREAD}\nP\n")


def ticks_over_a_pause(env, read):
    """How much the counter that action ``read`` prints grew over 2 s between actions
    (the sandbox frozen meanwhile)."""
    before = int(env.step(read)[0])
    time.sleep(2.0)
    return int(env.step(read)[0]) - before


def test_a_hidden_thread_is_stopped_while_the_sandbox_is_frozen():
    """Between actions the sandbox is frozen: nothing of the agent's runs."""
    env = make("bash")
    try:
        env.step(hidden_thread("/tmp/t.py", written("/tmp/ticks", "str(n)"))
                 + "python3 /tmp/t.py &\nsleep 0.3")
        ticks = ticks_over_a_pause(env, "cat /tmp/ticks")  # one every 50 ms, running
        assert ticks < 10, f"the thread ran while the sandbox was frozen ({ticks} ticks)"
    finally:
        env.close()


WRITES_ALIVE = written("/tmp/alive", "'%d %d' % (os.getpid(), n)")
SURVIVOR = f"""import subprocess, time
subprocess.run(["bash", "-c", {hidden_thread("/tmp/s.py", WRITES_ALIVE)!r}])
subprocess.Popen(["python3", "/tmp/s.py"], start_new_session=True)
time.sleep(0.5)
print(open("/tmp/alive").read())
"""

CHECK = """import os, time
def alive():
    return open('/tmp/alive').read() if os.path.exists('/tmp/alive') else 'none'
a = alive()
time.sleep(0.5)
print(a, '|', alive())"""


def test_a_hidden_thread_does_not_survive_a_python_reset():
    env = make("python")
    try:
        assert env.step(SURVIVOR)[0].strip()  # it runs, and writes
        env.reset(options={"task": 1})
        out = env.step(CHECK)[0]
        assert out.split() == ["none", "|", "none"], f"episode 1 writes in episode 2: {out!r}"
    finally:
        env.close()


def test_a_hidden_thread_does_not_survive_a_bash_reset():
    """Bash's reset signals every process (``kill(-1)``) and waits: it was never reached."""
    env = make("bash")
    try:
        env.step(hidden_thread("/tmp/s.py", WRITES_ALIVE) + "python3 /tmp/s.py & sleep 0.3")
        assert env.step("cat /tmp/alive")[0].strip()
        env.reset(options={"task": 0})
        out = env.step("sleep 0.5; cat /tmp/alive 2>&1 | head -c 40")[0]
        assert "No such file" in out
    finally:
        env.close()


def test_a_thread_of_the_interpreter_is_stopped_while_the_sandbox_is_frozen():
    """The interpreter's first thread waits for the next action; one it started ran on."""
    env = make("python")
    try:
        env.step("import threading, time\nticks = [0]\ndef worker():\n    while True:\n"
                 "        ticks[0] += 1\n        time.sleep(0.01)\n"
                 "threading.Thread(target=worker, daemon=True).start()\ntime.sleep(0.2)")
        ticks = ticks_over_a_pause(env, "print(ticks[0])")  # one every 10 ms, running
        assert ticks < 20, f"a thread ran while the sandbox was frozen ({ticks} ticks)"
    finally:
        env.close()
