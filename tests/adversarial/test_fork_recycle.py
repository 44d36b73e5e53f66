"""A closed fork's agent sandbox, given back to its parent as a warm spare, carries
nothing of the closed fork's agent into the next fork.

``fork()`` keeps warm spares; a fork closed on the thread that made it gives its agent
sandbox back to the environment it was forked from (``intercode.envs.spares``): the
sandbox is reset (every process killed, the pristine tree, a fresh shell or
interpreter or engine), then reset again to the parent's task, before the next fork
copies the parent's state into it. Whatever the closed fork's agent left (files,
processes, a changed interpreter, tables) must be gone, and the closed fork's handle
must not reach the sandbox any more.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import intercode
from intercode import testing
from intercode.envs.base import IntercodeEnv
from intercode.sandbox.base import Sandbox

COUNT_SLEEPS = ("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done "
                "| grep -c '^sleep 99'")
# the same once both background sleeps have started (up to 10 s: a loaded machine may take
# a while to exec them), so that the count before the close is not a race
BOTH_SLEEPS_STARTED = (f"for i in $(seq 100); do [ \"$({COUNT_SLEEPS})\" = 2 ] && break; "
                       f"sleep 0.1; done; {COUNT_SLEEPS}")
PY_COUNT_SLEEPS = ("import os\n"
                   "def cmd(p):\n"
                   "    try:\n"
                   "        return open('/proc/%s/cmdline' % p, 'rb').read()\n"
                   "    except OSError:\n"
                   "        return b''\n"
                   "print(sum(cmd(p).startswith(b'sleep\\x0099') for p in os.listdir('/proc') "
                   "if p.isdigit()))")


def make(name: str) -> IntercodeEnv:
    env = intercode.make(name, dataset=testing.small_dataset(name)).unwrapped
    assert isinstance(env, IntercodeEnv)
    env.reset(options={"task": 0})
    env.fork_spares = 1
    return env


def agent_box(env: IntercodeEnv) -> Sandbox:
    box = (env._agent if env.env_name == "bash"  # type: ignore[attr-defined]
           else env._boxes["agent"] if env.env_name == "python"  # type: ignore[attr-defined]
           else env._agent._box)  # type: ignore[attr-defined]
    assert isinstance(box, Sandbox)
    return box


def next_fork_in(env: IntercodeEnv, box: Sandbox) -> IntercodeEnv:
    """The next fork, which must run in ``box`` (the closed fork's, given back): the
    other spares are closed first."""
    spares = [pending.result() for pending in env._spares.pending]
    while len(env._spares.pending) > 1:
        dropped = env._spares.pending.popleft().result()
        if dropped is not None:
            dropped.close()
    assert spares[-1] is not None and agent_box(spares[-1]) is box
    fork = env.fork()
    assert agent_box(fork) is box
    return fork


@pytest.fixture
def bash() -> Iterator[IntercodeEnv]:
    env = make("bash")
    yield env
    env.close()


def test_a_closed_forks_files_processes_and_shell_do_not_reach_the_next_fork(
        bash: IntercodeEnv) -> None:
    bash.step("echo parent > /tmp/f")
    first = bash.fork()
    first.step("echo first > /tmp/f; echo x > /dev/shm/x; mkdir /tmp/left; "
               "nohup sleep 991 >/dev/null 2>&1 & disown; (setsid sleep 992 &); "
               "export LEAK=1; alias ls='echo pwned'")
    assert first.step(BOTH_SLEEPS_STARTED)[0] == "2\n"
    box = agent_box(first)
    first.close()
    fork = next_fork_in(bash, box)
    try:
        assert fork.step("cat /tmp/f")[0] == "parent\n"
        assert fork.step("ls -A /dev/shm; ls -d /tmp/left 2>&1 | grep -c 'No such'")[0] == "1\n"
        assert fork.step(COUNT_SLEEPS)[0] == "0\n"
        assert fork.step("echo ${LEAK:-none}")[0] == "none\n"
    finally:
        fork.close()


def test_the_closed_forks_handle_no_longer_reaches_its_sandbox(bash: IntercodeEnv) -> None:
    bash.step("echo parent > /tmp/f")
    first = bash.fork()
    box = agent_box(first)
    first.close()
    assert first._agent is None  # type: ignore[attr-defined]
    fork = next_fork_in(bash, box)
    try:
        try:  # a closed environment's step does not run in the sandbox it gave back
            first.step("echo first > /tmp/f")
        except Exception:  # any refusal will do; what matters is below
            pass
        finally:
            first.close()
        assert fork.step("cat /tmp/f")[0] == "parent\n"
        assert box.alive
    finally:
        fork.close()


def test_a_closed_python_forks_interpreter_and_processes_do_not_reach_the_next_fork() -> None:
    env = make("python")
    try:
        env.step("x = 'parent'")
        first = env.fork()
        first.step("import builtins, subprocess\n"
                   "p = subprocess.Popen(['sleep', '993'])\n"
                   "x = 'first'\n"
                   "builtins.print = lambda *a, **k: None")
        box = agent_box(first)
        first.close()
        fork = next_fork_in(env, box)
        try:
            assert fork.step("print(x)")[0] == "parent\n"  # print is the builtin again
            assert fork.step(PY_COUNT_SLEEPS)[0] == "0\n"
        finally:
            fork.close()
    finally:
        env.close()


def test_a_closed_sql_forks_tables_do_not_reach_the_next_fork() -> None:
    env = make("sql")
    try:
        env.step("CREATE TABLE t(a)")
        first = env.fork()
        first.step("CREATE TABLE leak(a)")
        first.step("CREATE TEMP TABLE tleak(a)")
        box = agent_box(first)
        first.close()
        fork = next_fork_in(env, box)
        try:
            tables = ("SELECT group_concat(name) FROM (SELECT name FROM sqlite_master UNION "
                      "ALL SELECT name FROM sqlite_temp_master) WHERE name LIKE '%leak%' "
                      "OR name = 't'")
            assert fork.step(tables)[0] == env.step(tables)[0]
            assert "leak" not in fork.step(tables)[0] and "t" in fork.step(tables)[0]
        finally:
            fork.close()
    finally:
        env.close()
