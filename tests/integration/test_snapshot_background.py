"""Background processes are not carried over by a restore, and the first observation
after restoring a snapshot that had some says so (and only then).

The count is made while the snapshot is taken: for Bash by the tree's copy (which runs
while the shell's state is captured), for Python once the held interpreter is
registered (the copy itself is not a background process), and a restore reports it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import intercode
from intercode import testing
from intercode.envs.base import IntercodeEnv

NOTE = "background process(es); processes are not carried over by a restore"
START = {"bash": "sleep 300 & sleep 300 &",
         "python": "import subprocess; _p = [subprocess.Popen(['sleep', '300']) "
                   "for _ in range(2)]"}
PROBE = {"bash": "echo probe", "python": "print('probe')"}


@pytest.fixture(params=sorted(START))
def env(request: pytest.FixtureRequest) -> Iterator[IntercodeEnv]:
    e = intercode.make(request.param, dataset=testing.small_dataset(request.param)).unwrapped
    assert isinstance(e, IntercodeEnv)
    e.reset(options={"task": 0})
    yield e
    e.close()


def test_a_restore_of_a_snapshot_with_background_processes_says_so(env: IntercodeEnv) -> None:
    name = env.env_name
    quiet = env.snapshot()
    env.step(START[name])
    busy = env.snapshot()
    env.restore(busy)
    first = env.step(PROBE[name])[0]
    assert "probe" in first and "had 2 " + NOTE in first
    assert NOTE not in env.step(PROBE[name])[0]  # said once
    env.restore(quiet)
    assert NOTE not in env.step(PROBE[name])[0]
    env.restore(busy)  # the count belongs to the snapshot: said again
    assert "had 2 " + NOTE in env.step(PROBE[name])[0]


def test_a_snapshot_without_background_processes_restores_without_a_note(
        env: IntercodeEnv) -> None:
    name = env.env_name
    for _ in range(3):
        snap = env.snapshot()
        env.restore(snap)
        assert NOTE not in env.step(PROBE[name])[0]
        snap.release()


def test_a_python_snapshot_is_kept_before_the_next_action_runs() -> None:
    """The held copy is registered (and the processes counted) before the interpreter
    gets its next action: one that exits the interpreter at once, or starts a process,
    right after the snapshot changes neither the restore nor its note."""
    env = intercode.make("python", dataset=testing.small_dataset("python")).unwrapped
    assert isinstance(env, IntercodeEnv)
    try:
        env.reset(options={"task": 0})
        env.step("x = 7")
        for action in ("import os; os._exit(0)",
                       "import subprocess; _q = subprocess.Popen(['sleep', '300'])"):
            for _ in range(5):
                snap = env.snapshot()
                env.step(action)
                env.restore(snap)
                assert env.step("print(x)")[0] == "7\n"
                snap.release()
    finally:
        env.close()
