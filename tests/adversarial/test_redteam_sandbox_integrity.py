"""The scheduling an agent gives other processes of its sandbox does not outlive its episode.

Every process of a sandbox runs as one user, and the kernel lets a process lower the
scheduling of any other of the same user, as it let it lower their resource limits (see
``test_agent_rlimits.py``): ``chrt -i -p 0 1`` put the supervisor (pid 1) under
``SCHED_IDLE``, ``renice -n 19 -p 1`` (or ``-u`` the user: every process) raised its nice
value, ``taskset -p 1 1`` pinned it to one CPU and ``ionice -c3 -p 1`` gave it idle I/O.
Every later shell, interpreter and engine inherits pid 1's, and an unprivileged process
cannot take its own back (``RLIMIT_NICE`` is 0): the next episodes ran only when the
host's CPUs had nothing else to do, their actions timing out on a busy host. The seccomp
filter refuses a new scheduling for any process other than the caller (``setpriority``,
``sched_setscheduler``, ``sched_setparam``, ``sched_setattr``, ``sched_setaffinity``,
``ioprio_set`` with a pid, a process group or a user); a process still changes its own
(``nice``, ``chrt``, ``taskset`` and ``ionice`` running a command).
"""

from __future__ import annotations

from typing import Any

import pytest
from backends import shell_env, shell_env_id, shell_envs

TASK = 0

# the scheduling of pid 1 and of the process reading it (the agent's shell or a child of
# the interpreter): policy and priority, nice value, CPUs, I/O class
SHOW = ("for p in 1 $$; do chrt -p $p | sed 's/^pid [0-9]*//'; "
        "cut -d' ' -f19 /proc/$p/stat | sed 's/^/nice /'; "
        "taskset -p $p | sed 's/^pid [0-9]*//'; ionice -p $p; done")
# lower the scheduling of every other process of the sandbox, pid 1 first; print those
# changed
LOWER_OTHERS = (
    "for p in 1 $(ls /proc | grep -E '^[0-9]+$'); do [ $p = $$ ] && continue; "
    "renice -n 19 -p $p >/dev/null 2>&1 && echo changed nice $p; "
    "chrt -i -p 0 $p 2>/dev/null && echo changed policy $p; "
    "taskset -p 1 $p >/dev/null 2>&1 && echo changed cpus $p; "
    "ionice -c3 -p $p 2>/dev/null && echo changed io $p; done; "
    "renice -n 19 -u $(id -u) >/dev/null 2>&1 && echo changed user; "
    "ionice -c3 -u $(id -u) 2>/dev/null && echo changed io user; true")
# the agent's own process still lowers its own (and what it runs)
LOWER_SELF = "renice -n 5 -p 0 >/dev/null; nice -n 3 true && chrt -i 0 true && " \
             "taskset 1 true && ionice -c3 true && echo own ok"


def _in_python(script: str) -> str:
    return ("import subprocess\nprint(subprocess.run(['bash', '-c', " + repr(script) +
            "], capture_output=True, text=True).stdout, end='')")


class Episode:
    """One environment of a backend, and the scheduling a fresh one shows."""

    def __init__(self, env: Any, shell: str) -> None:
        self.env = env
        self.shell = shell
        env.reset(options={"task": TASK})
        self.fresh = self.run(SHOW)
        assert "SCHED_OTHER" in self.fresh and "SCHED_IDLE" not in self.fresh, self.fresh

    def run(self, script: str) -> str:
        action = script if self.shell == "bash" else _in_python(script)
        return str(self.env.step(action)[0])


@pytest.fixture(scope="module", params=shell_envs(), ids=shell_env_id)
def episode(request):
    with shell_env(request.param) as env:
        yield Episode(env, request.param[1])


def test_scheduling_lowered_for_other_processes_does_not_reach_the_next_episode(episode):
    env = episode.env
    env.reset(options={"task": TASK})
    lowered = episode.run(LOWER_OTHERS)
    assert "changed" not in lowered, lowered
    env.reset(options={"task": TASK})
    assert episode.run(SHOW) == episode.fresh


def test_a_process_still_lowers_its_own_scheduling(episode):
    episode.env.reset(options={"task": TASK})
    assert episode.run(LOWER_SELF).strip() == "own ok"


# -- intercode.make: Gymnasium's own keywords ---------------------------------------------


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"max_episode_steps": 5}, r"make\(\) takes max_turns=5, not max_episode_steps"),
    ({"max_turns": 3, "max_episode_steps": 5}, r"not max_episode_steps"),
    ({"disable_env_checker": "no"}, r"disable_env_checker must be True or False"),
], ids=["max_episode_steps", "both", "disable_env_checker"])
def test_make_refuses_gymnasiums_keywords_misused_in_one_line(kwargs, match):
    """``max_episode_steps``, which ``make`` passes to Gymnasium itself (from
    ``max_turns``), was a raw ``TypeError`` ("got multiple values"); a non-bool
    ``disable_env_checker`` was taken as true."""
    import intercode
    from intercode.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        intercode.make("bash", **kwargs)
