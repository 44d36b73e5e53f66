"""A process whose first thread exited (``syscall(SYS_exit)``) while another runs on.

``/proc/<pid>/stat`` then says ``Z`` and ``/proc/<pid>/maps`` is empty: the supervisor
took such a process for a zombie (not running, nothing to stop or kill, no mapping),
and its thread survived a Python reset, ran while the sandbox was frozen, and wrote
through a shared mapping that a snapshot's restore then trusted.
"""
from __future__ import annotations

import time

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
open("/tmp/mapped", "w").close()
ctypes.CDLL(None).syscall({'x86_64': 60, 'aarch64': 93}[os.uname().machine], 0)
P
python3 /tmp/w.py & until [ -e /tmp/mapped ]; do sleep 0.05; done; sleep 0.2; cat /tmp/f; echo; P=$!; echo state=$(cut -d" " -f3 /proc/$P/stat) maps=$(wc -c < /proc/$P/maps)'''


def make(name):
    env = intercode.make(name, dataset=testing.small_dataset(name)).unwrapped
    env.reset(options={"task": 0})
    return env


def test_a_hidden_threads_write_through_a_mapping_does_not_survive_a_restore():
    env = make("bash")
    try:
        out = env.step(ZOMBIE_WRITER)[0]
        assert out.startswith("AAAA"), out
        snap = env.snapshot()
        out = env.step("touch /tmp/go; until [ -e /tmp/done ]; do sleep 0.05; done; cat /tmp/f")[0]
        assert out == "BBBB", out
        env.restore(snap)
        after = env.step("cat /tmp/f")[0]
        assert after.startswith("AAAA"), f"a later write survived the restore: {after!r}"
    finally:
        env.close()


def test_a_hidden_thread_is_stopped_while_the_sandbox_is_frozen():
    """Between actions the sandbox is frozen: nothing of the agent's runs."""
    env = make("bash")
    try:
        env.step(r'''cat > /tmp/t.py <<'P'
import ctypes, os, threading, time
def worker():
    n = 0
    while True:
        n += 1
        open("/tmp/ticks", "w").write(str(n))
        time.sleep(0.05)
threading.Thread(target=worker).start()
ctypes.CDLL(None).syscall({'x86_64': 60, 'aarch64': 93}[os.uname().machine], 0)
P
python3 /tmp/t.py &
sleep 0.3''')
        a = int(env.step("cat /tmp/ticks")[0])
        time.sleep(2.0)  # frozen meanwhile
        b = int(env.step("cat /tmp/ticks")[0])
        assert b - a < 10, f"the thread ran while the sandbox was frozen ({b - a} ticks)"
    finally:
        env.close()


SURVIVOR = r'''
import subprocess, time
open("/tmp/s.py", "w").write("""
import ctypes, os, threading, time
def worker():
    n = 0
    while True:
        n += 1
        with open('/tmp/alive', 'w') as f:
            f.write('%d %d' % (os.getpid(), n))
        time.sleep(0.05)
threading.Thread(target=worker).start()
ctypes.CDLL(None).syscall({'x86_64': 60, 'aarch64': 93}[os.uname().machine], 0)
""")
subprocess.Popen(["python3", "/tmp/s.py"], start_new_session=True)
time.sleep(0.5)
print(open("/tmp/alive").read())
'''

CHECK = """import os, time
def alive():
    return open('/tmp/alive').read() if os.path.exists('/tmp/alive') else 'none'
a = alive()
time.sleep(0.5)
print(a, '|', alive())"""


def test_a_hidden_thread_does_not_survive_a_python_reset():
    env = make("python")
    try:
        env.step(SURVIVOR)
        env.reset(options={"task": 1})
        out = env.step(CHECK)[0]
        assert out.split() == ["none", "|", "none"], f"episode 1 writes in episode 2: {out!r}"
    finally:
        env.close()


def test_a_hidden_thread_does_not_survive_a_bash_reset():
    """Bash's reset signals every process (``kill(-1)``) and waits: it was never reached."""
    env = make("bash")
    try:
        env.step(r'''cat > /tmp/s.py <<'P'
import ctypes, os, threading, time
def worker():
    while True:
        open('/tmp/alive', 'w').write(str(time.time()))
        time.sleep(0.05)
threading.Thread(target=worker).start()
ctypes.CDLL(None).syscall({'x86_64': 60, 'aarch64': 93}[os.uname().machine], 0)
P
python3 /tmp/s.py & sleep 0.3''')
        env.reset(options={"task": 0})
        out = env.step("sleep 0.5; cat /tmp/alive 2>&1 | head -c 40")[0]
        assert "No such file" in out
    finally:
        env.close()
