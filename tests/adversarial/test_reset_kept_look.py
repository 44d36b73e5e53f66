"""A reset that takes the last diff's look at the tree instead of its own, attacked.

When the diff (``status``) finds nothing of the agent's able to run (the shell, one
thread, blocked reading its next action, and no other process), its look is kept; the
next reset takes it if the shell has not run once since and no other request came. Each
test here changes the tree after such a diff in a way the kept look would miss, and
checks that the reset looks again and leaves nothing behind.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from intercode.envs.bash import BashEnv
from intercode.envs.core.bash import IGNORED_NAMES
from intercode.sandbox.base import Sandbox
from intercode.sandbox.limits import Limits

TASK = 0  # nl2bash-fs1's first task


@pytest.fixture(scope="module")
def env() -> Iterator[BashEnv]:
    environment = BashEnv("nl2bash-fs1", limits=Limits(timeout=30))
    yield environment
    environment.close()


def _box(env: BashEnv) -> Sandbox:
    env.reset(options={"task": TASK})
    box = env._sandbox("agent")
    box.run(":")  # (the new shell waits for its next action: a diff's look can be kept)
    return box


def _diff(box: Sandbox) -> list[str]:
    """The diff, whose look must have been kept (else the test shows nothing)."""
    changes = [c.path for c in box.diff(IGNORED_NAMES)]
    assert box.diff_kept
    return changes


def _reset(env: BashEnv, box: Sandbox) -> bool:
    """Reset; whether the reset took the diff's look."""
    env.reset(options={"task": TASK})
    return bool(box.reset_stats.get("kept_look"))


def _left(box: Sandbox) -> str:
    return box.run("ls -d /testbed/late* /testbed/new* 2>/dev/null; stat -c %a /testbed/dir1").output


def test_a_reset_right_after_a_diff_takes_its_look(env):
    """What it is for: nothing ran between the diff and the reset."""
    box = _box(env)
    box.run("echo x > /testbed/new.txt")
    assert _diff(box) == ["testbed/new.txt"]
    assert _reset(env, box)
    assert _left(box).split() == ["755"]


def test_an_action_after_the_diff_makes_the_reset_look_again(env):
    box = _box(env)
    _diff(box)
    box.run("touch /testbed/late.txt")
    assert not _reset(env, box)
    assert _left(box).split() == ["755"]


def test_a_process_running_at_the_diff_makes_the_reset_look_again(env):
    """A process the shell let go of (its parent exited: pid 1 adopted it, and its end
    does not wake the shell) writes after the diff: the diff sees another process than
    the shell, so its look is not kept."""
    box = _box(env)
    box.run("( (sleep 0.3; echo y > /testbed/late.txt) >/dev/null 2>&1 & ); sleep 0.05")
    assert box.diff(IGNORED_NAMES) == []
    assert not box.diff_kept
    time.sleep(0.6)
    assert not _reset(env, box)
    assert _left(box).split() == ["755"]


def test_a_hash_after_the_diff_makes_the_reset_look_again(env):
    """A ``hashes`` request may follow links (their access times move): the look goes."""
    box = _box(env)
    box.run("echo x > /testbed/new.txt")
    _diff(box)
    box.hashes(["testbed/new.txt"])
    assert not _reset(env, box)
    assert _left(box).split() == ["755"]


def test_a_diff_that_opened_a_mode_up_is_not_kept(env):
    """A directory the agent locked is opened up for the diff's look and locked again: a
    change of the supervisor's own, so the look is not kept."""
    box = _box(env)
    box.run("chmod 000 /testbed/dir1")
    box.diff(IGNORED_NAMES)
    assert not box.diff_kept
    assert not _reset(env, box)
    assert _left(box).split() == ["755"]


def test_a_command_of_the_hosts_after_the_diff_makes_the_reset_look_again(env):
    """A command the host runs outside the shell (``exec``) writes the tree and is gone
    by the reset: the shell did not run and no other process is left, so only the
    request itself can say that the look is stale."""
    box = _box(env)
    _diff(box)
    assert box.exec(["/bin/sh", "-c", "touch /testbed/late.txt"]).exit_code == 0
    assert not _reset(env, box)
    assert _left(box).split() == ["755"]


def test_a_snapshot_restored_after_the_diff_makes_the_reset_look_again(env):
    box = _box(env)
    box.run("echo x > /testbed/new.txt")
    box.tree_snapshot(7)
    box.run("rm /testbed/new.txt")
    _diff(box)
    box.tree_restore(7, "/")
    assert not _reset(env, box)
    assert _left(box).split() == ["755"]


# a child of the shell: copies bash's saved copies of the protocol descriptors (while an
# action runs, fds 10, 11 and 12 hold 60, 62 and 63) and waits
GRAB = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(os.getppid())
for src, dst in ((10, 60), (11, 62), (12, 63)):
    fd = libc.syscall(438, pidfd, src, 0)  # pidfd_getfd
    os.dup2(fd, dst, inheritable=False)
open("/tmp/.grabbed", "w").close()
signal.pause()
"""
# the shell's process, running another program: takes them back, ends the child, says
# the action ended as the loop would, and waits for the next action as the loop does
BECOME = """
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(int(sys.argv[2]))
for n in (60, 62, 63):
    os.dup2(libc.syscall(438, pidfd, n, 0), n, inheritable=False)
os.kill(int(sys.argv[2]), signal.SIGKILL)
os.waitpid(int(sys.argv[2]), 0)
os.unlink("/tmp/.grabbed")
os.write(62, ("%s 0 /\\0" % sys.argv[1]).encode())
while True:
    os.read(63, 1)
"""


def test_a_shell_that_runs_another_program_is_never_still(env):
    """The agent's action runs another program in the shell's own process (``exec``),
    which speaks the shell's protocol and waits for the next action as the shell does:
    such a program could arm a timer and change the tree between the reset's last look
    at the shell and its kill (a red-team review did, with a native signal handler). Its
    stack is elsewhere than the bash the supervisor spawned: the diff's look is never
    kept for it."""
    box = _box(env)
    _diff(box)  # (the spawned bash, still: kept)
    grab = GRAB.replace("'", "'\\''")
    become = BECOME.replace("'", "'\\''")
    result = box.run(f"python3 -c '{grab}' & while [ ! -e /tmp/.grabbed ]; do :; done; "
                     f"exec python3 -c '{become}' \"$__ic_seq\" $!")
    assert result.exit_code == 0
    assert box.diff(IGNORED_NAMES) == []
    assert not box.diff_kept
    assert not _reset(env, box)
    assert box.run("echo ok").output.strip() == "ok"

