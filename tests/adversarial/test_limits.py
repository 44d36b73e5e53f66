"""Attacks on the sandbox's limits and on its shell protocol.

Each test checks the outcome: the resource stays bounded, the episode goes on (the
next action works) and the host sees no infrastructure error.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import intercode
from intercode import testing
from intercode.sandbox.bwrap import BwrapSandbox
from intercode.sandbox.filetree import DIR, Entry, FileTree
from intercode.sandbox.limits import Limits, MiB

TREE = FileTree.of([Entry("work", DIR, 0o755, 1_600_000_000 * 10**9)])


@pytest.fixture()
def box():
    """A sandbox with short, small limits."""
    sb = BwrapSandbox(limits=Limits(timeout=3, kill_grace=0.5, processes=64, files=3000,
                                    storage=64 * MiB, shm=16 * MiB))
    sb.start()
    sb.load(TREE)
    yield sb
    sb.close()


def alive(sb: BwrapSandbox) -> None:
    """The episode goes on: the shell answers."""
    result = sb.run("echo still-here")
    assert "still-here\n" in result.output, result


def py(code: str) -> str:
    """A shell command running ``code`` with the sandbox's python3."""
    return "python3 - <<'EOF'\n" + code.strip() + "\nEOF"


# -- memory outside every process --


def test_memfd_is_refused(box):
    result = box.run(py("""
import os
try:
    fd = os.memfd_create("hoard")
    os.ftruncate(fd, 256 << 20)
    os.write(fd, b"x" * (64 << 20))
    print("memfd held")
except OSError as exc:
    print("refused", exc.errno)
"""))
    assert "memfd held" not in result.output
    assert "refused" in result.output
    alive(box)


def test_sysv_shared_memory_and_queues_are_refused(box):
    result = box.run(py("""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT = 0, 0o1000
print("shm", libc.shmget(IPC_PRIVATE, 64 << 20, IPC_CREAT | 0o600))
print("msg", libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600))
"""))
    assert "shm -1" in result.output and "msg -1" in result.output, result.output
    assert box.run("ipcs -m 2>/dev/null | grep -c 0x || true").output.strip() in ("", "0")


@pytest.mark.parametrize("command", ["unshare -Urm true", "unshare -r true", "unshare -U true"])
def test_no_nested_user_namespace(box, command):
    result = box.run(f"{command}; echo rc=$?")
    assert "rc=0" not in result.output, result.output
    alive(box)


def test_no_private_tmpfs_beyond_the_storage_limit(box):
    result = box.run("unshare -Urm sh -c 'mount -t tmpfs -o size=1g none /mnt && "
                     "head -c 100M /dev/zero > /mnt/big && echo wrote'; echo done")
    assert "wrote" not in result.output
    assert "done" in result.output


def test_dev_shm_and_tmp_stay_bounded(box):
    result = box.run("head -c 40M /dev/zero > /dev/shm/x 2>/dev/null; "
                     "head -c 100M /dev/zero > /tmp/y 2>/dev/null; "
                     "echo sizes $(du -m /dev/shm/x /tmp/y | cut -f1); rm -f /dev/shm/x /tmp/y")
    shm, tmp = (int(n) for n in result.output.split("sizes")[1].split())
    assert shm <= 16 and tmp <= 64, result.output
    alive(box)


# -- inodes --


def count_files(sb: BwrapSandbox) -> int:
    return int(sb.run("find / -xdev 2>/dev/null | wc -l").output.split()[0])


def test_inode_flood_from_a_program_is_stopped(box):
    result = box.run(py("""
import os
os.makedirs("/tmp/flood", exist_ok=True)
for i in range(300_000):
    open("/tmp/flood/%d" % i, "w").close()
print("created them all")
"""))
    assert "created them all" not in result.output
    assert any("files" in note for note in result.notes), result.notes
    assert count_files(box) < 100_000
    alive(box)
    box.reset()
    assert box.run("ls /tmp | wc -l").output.strip() == "0"


def test_inode_flood_from_the_shell_itself_is_stopped(box):
    result = box.run("mkdir -p /tmp/f; for i in {1..200000}; do : > /tmp/f/$i; done; echo finished")
    assert "finished" not in result.output
    assert result.shell_restarted
    assert count_files(box) < 100_000
    # under the limit again after deleting: the shell works normally
    assert box.run("rm -rf /tmp/f; touch /tmp/ok; echo fine").output == "fine\n"
    alive(box)


@pytest.mark.parametrize("flood", [
    "open('/tmp/f', 'w').close()\nfor i in range(300_000): os.link('/tmp/f', '/tmp/l%d' % i)",
], ids=["hard-links"])
def test_link_and_xattr_floods_count_as_files(box, flood):
    # a hard link costs kernel memory without a new inode; tmpfs counts it
    result = box.run(py("import os\n" + flood + "\nprint('flooded')"))
    assert "flooded" not in result.output
    assert any("files" in note for note in result.notes), (result.output, result.notes)
    alive(box)


def test_extended_attributes_are_refused(box):
    # values of extended attributes are kernel memory the tmpfs's size does not count (a
    # flood once stored 63 MiB past a 16 MiB storage limit): the filter answers as a file
    # system without them; reading and removing stay allowed
    result = box.run(py("import os\nopen('/tmp/x', 'w').close()\n"
                        "try:\n    os.setxattr('/tmp/x', 'user.pad', b'x')\n"
                        "except OSError as e:\n    print(e.strerror)\n"
                        "print(os.listxattr('/tmp/x'))"))
    assert result.output == "Operation not supported\n[]\n", result.output
    alive(box)


def test_a_locked_root_hides_no_mount_from_the_watchdogs(box):
    # the supervisor runs as the agent's user: with "/" at mode 000 it reached neither
    # /proc (it crashed: an infrastructure error) nor the scratch mounts by path
    result = box.run(py("""
import os
os.chdir("/dev/shm")
os.chmod("/", 0)
for i in range(300_000):
    open("%d" % i, "w").close()
print("created them all")
"""))
    assert "created them all" not in result.output
    assert any("files" in note for note in result.notes), result.notes
    alive(box)
    box.reset()
    assert box.run("stat -c %a /; ls -A /dev/shm | wc -l").output == "755\n0\n"


# -- CPU between actions --


def test_background_loop_gets_no_cpu_between_actions(box):
    pid = box.run("(while :; do :; done) & echo $!").output.strip()
    assert pid.isdigit()
    time.sleep(2.0)  # the agent "thinks"
    ticks = box.run(f"read -a f < /proc/{pid}/stat; echo $(( f[13] + f[14] )) $(getconf CLK_TCK)")
    used, hz = (int(n) for n in ticks.output.split())
    assert used / hz < 0.5, f"the loop used {used / hz:.2f} s of CPU while the host waited"


def sandbox_processes(sb: BwrapSandbox) -> dict[int, str]:
    """Host view: state of every process of the sandbox except its supervisor (pid 1)."""
    assert sb._proc is not None
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[str, bool]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            nspid = [line for line in (entry / "status").read_text().splitlines()
                     if line.startswith("NSpid:")]
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        info[int(entry.name)] = (fields[0], bool(nspid) and nspid[0].split()[-1] == "1")
    found, todo = {}, [sb._proc.pid]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        if pid in info and pid != sb._proc.pid and not info[pid][1]:
            found[pid] = info[pid][0]
    return found


def test_background_forking_loops_are_stopped_between_actions(box):
    # forks all the time but stays under the process limit, so no watchdog fires
    box.run("for i in 1 2 3 4; do (while :; do (:); done) >/dev/null 2>&1 & done; sleep 0.3")
    time.sleep(0.3)
    for _ in range(5):
        states = sandbox_processes(box)
        running = {pid: st for pid, st in states.items() if st in ("R", "S")}
        # the idle shell (blocked reading its next action) is the only one allowed
        assert len(running) <= 1, running
        time.sleep(0.1)
    alive(box)


FORK_LOOP = """
import os
big = bytearray(%d * 1024 * 1024)
for i in range(0, len(big), 4096):
    big[i] = 1
while True:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_a_thaw_right_after_a_freeze_leaves_no_process_stopped():
    # A process in the middle of fork passes kill(-1, SIGSTOP) on to its child; a
    # kill(-1, SIGCONT) before the fork is done missed the child, stopped for good (on a
    # loaded machine a test of the gold or of the agent hung: golds scored 0.67).
    import random

    sb = BwrapSandbox(limits=Limits(timeout=10, memory=2 * 1024 * MiB))
    sb.start()
    try:
        sb.load(TREE)
        sb.run(py("open('/tmp/f.py', 'w').write(%r)" % (FORK_LOOP % 600)) +
               "\n(python3 /tmp/f.py &); sleep 2")
        assert "/tmp/f.py" in sb.run("ps -eo stat=,args= | grep '[f].py'").output
        rng = random.Random(9)
        for _ in range(10):
            for _ in range(100):  # what a slow supervisor sees: a freeze, then a thaw
                sb._channel.send({"op": "freeze", "n": 10**6})
                time.sleep(0.0055 + rng.random() * 0.002)
                sb._channel.send({"op": "thaw"})
                time.sleep(rng.random() * 0.003)
            time.sleep(0.2)
            states = sb.run("ps -eo stat=,args= | grep '[f].py'").output.split()
            assert "T" not in states, states
    finally:
        sb.close()


def test_a_process_the_agent_stops_stays_stopped_after_a_thaw(box):
    # a thaw that continued processes continues, for a second, the new ones left stopped
    # by a fork in flight (born since the thaw, less than a clock tick of CPU): never one
    # the agent stopped that was there at the thaw, or that ran longer
    box.run("(while :; do :; done) & echo $! > /tmp/busy; sleep 1000 & echo $! > /tmp/idle")
    time.sleep(0.1)  # frozen between the actions
    # (the busy one is stopped once it has used CPU: on a loaded machine 0.2 s of a busy
    # loop was sometimes less than a tick of it)
    out = box.run("kill -STOP $(cat /tmp/idle); (while :; do :; done) & p=$!; sleep 0.2; "
                  "until [ \"$(awk '{print $14}' /proc/$p/stat)\" -gt 2 ]; do sleep 0.05; done; "
                  "kill -STOP $p; sleep 1.5; ps -o stat= -p $(cat /tmp/idle); "
                  "ps -o stat= -p $p; kill $(cat /tmp/busy) $p; kill -CONT $p").output
    assert [state[:1] for state in out.split()] == ["T", "T"], out
    alive(box)


def test_frozen_sandbox_still_answers_diff_hashes_capture_and_exec(box):
    box.run("(while :; do date > /work/clock; done) & sleep 0.2")
    time.sleep(0.05)
    changes = box.diff()
    assert [c.path for c in changes] in (["work/"], ["work/clock"])
    assert set(box.hashes(["work/clock"])) == {"work/clock"}
    assert "work/clock" in {e.path for e in box.capture().entries}
    assert box.exec(["cat", "/work/clock"]).exit_code == 0
    # the loop is still frozen after the exec, and runs again during the next action (the
    # exec's kill round continues the kept processes and the freeze stops them again: a
    # process not yet scheduled since shows as running, with its stop pending, until it
    # is, and it stops before it runs any of its code)
    deadline = time.monotonic() + 5
    while (any(st == "R" for st in sandbox_processes(box).values())
           and time.monotonic() < deadline):
        time.sleep(0.01)
    for _ in range(10):  # and it stays so (a loop that ran would show running in some)
        assert all(st not in ("R",) for st in sandbox_processes(box).values())
        time.sleep(0.01)
    alive(box)


# -- protocol descriptors --


def test_no_protocol_descriptor_is_inherited(box):
    result = box.run(py("import os; print(sorted(int(fd) for fd in os.listdir('/proc/self/fd')))"))
    # 0, 1, 2 and the descriptor listdir itself opened
    assert result.output.strip() == "[0, 1, 2, 3]", result.output


@pytest.mark.skipif(os.geteuid() != 0, reason="as a non-root host user the pipes are the "
                    "agent's own (see the inbox/shell.py docstring)")
def test_protocol_pipes_cannot_be_reopened_through_proc(box):
    result = box.run(py("""
import os
shell = os.getppid()
opened = []
for fd in os.listdir("/proc/%d/fd" % shell):
    if int(fd) > 2:
        for mode in (os.O_RDONLY, os.O_WRONLY):
            try:
                os.close(os.open("/proc/%d/fd/%s" % (shell, fd), mode | os.O_NONBLOCK))
                opened.append(fd)
            except OSError:
                pass
print("opened", opened)
"""))
    assert "opened []" in result.output, result.output


def test_the_shells_descriptors_cannot_be_copied_with_pidfd_getfd(box):
    """While an action runs, bash keeps copies of its protocol descriptors (10-12); a child
    copied them with ``pidfd_getfd`` and could answer later actions itself."""
    result = box.run(py("""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(os.getppid())
got = []
for fd in list(range(3, 16)) + [60, 61, 62, 63]:
    new = libc.syscall(438, pidfd, fd, 0)
    if new >= 0:
        got.append(fd)
        os.close(new)
    elif ctypes.get_errno() not in (1, 9):
        print("errno", ctypes.get_errno())
print("got", got)
"""))
    assert "got []" in result.output, result.output


def test_a_later_action_cannot_be_ended_in_advance(box):
    # the attack: guess the next sequence number and forge its status
    box.run("n=$__ic_seq; (sleep 0.3; for fd in 10 11 12 62; do for d in 1 2 3; do "
            "printf '%s 0 /forged\\0' \"$((n + d))\" >&$fd; done; done) 2>/dev/null &")
    result = box.run("sleep 1; echo real")
    assert result.output.endswith("real\n")  # the action ran to its end
    assert result.cwd != "/forged" and result.exit_code == 0


# -- closed standard descriptors --


@pytest.mark.parametrize("breaker", ["exec 1>&-", "exec 2>&- 1>/dev/null", "exec 1>&- 2>&-"])
def test_closed_output_is_restored(box, breaker):
    box.run(breaker)
    result = box.run("echo out; echo err >&2")
    assert result.output == "out\nerr\n", result


# -- a large process killed at the timeout --


def test_large_process_killed_at_timeout_is_the_agents_outcome():
    sb = BwrapSandbox(limits=Limits(timeout=2, kill_grace=1.0, memory=3 << 30))
    sb.start()
    try:
        sb.load(TREE)
        result = sb.run("python3 -c 'b=bytearray(1500<<20); import time; time.sleep(60)' & "
                        "sleep 30")
        assert result.timed_out
        alive(sb)
    finally:
        sb.close()


def test_limits_reject_bad_files_value():
    from intercode.errors import ConfigError

    with pytest.raises(ConfigError):
        Limits(files=0)


def test_fanotify_groups_are_refused(box):
    # fanotify groups (unprivileged since Linux 5.13, with FAN_REPORT_FID) are a per-user
    # quota of the host, 128 for every sandbox of one host user, like inotify instances
    result = box.run(py("import ctypes, os\n"
                        "libc = ctypes.CDLL(None, use_errno=True)\n"
                        "fd = libc.fanotify_init(0x200, os.O_RDONLY)\n"
                        "print(fd, os.strerror(ctypes.get_errno()))"))
    assert result.output == "-1 Function not implemented\n", result.output
    alive(box)


def test_a_read_only_locale_variable_does_not_stall_the_next_action():
    """The shell loop reads each action to its end byte by byte. A loop that read it with
    ``LC_ALL=C read -N <bytes>`` (in blocks) was at the agent's mercy: with LC_ALL made
    read-only the assignment fails, -N counts characters, and a multibyte action waited
    for bytes that never came until its time limit, and lost the shell."""
    env = intercode.make("bash", dataset=testing.small_dataset("bash"),
                         limits=Limits(timeout=3)).unwrapped
    try:
        env.reset(options={"task": 0})
        env.step("readonly LC_ALL; X=kept")
        obs, *_rest, info = env.step("echo héllo wörld ☃ $X")
        assert obs == "héllo wörld ☃ kept\n"
        assert not info["timed_out"] and not info["shell_restarted"]
    finally:
        env.close()
