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
