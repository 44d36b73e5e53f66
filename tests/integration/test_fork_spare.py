"""The warm spare of ``fork()``: a sibling whose sandboxes boot in the background.

Each fork begins spares for the next ones (``fork_spares``, on the spare-starting
threads); the next fork hands the first one begun over instead of starting a new
environment. The spare is a separate sandbox
(the agent cannot see it), it is closed with its environment (no sandbox outlives
``close()``), a fork from it is independent of its parent and of other forks, and a
spare that died before it was used is replaced without the fork failing.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

import intercode
from intercode import testing
from intercode.envs.base import IntercodeEnv
from intercode.sandbox.base import Sandbox

WRITE = {"bash": "echo parent > /tmp/f", "python": "x = 'parent'",
         "sql": "CREATE TABLE t(a)"}
READ = {"bash": "cat /tmp/f", "python": "print(x)", "sql": "SELECT count(*), group_concat(a) FROM t"}
CHANGE = {"bash": "echo {who} > /tmp/f", "python": "x = '{who}'",
          "sql": "INSERT INTO t VALUES ('{who}')"}


@pytest.fixture(params=sorted(WRITE))
def env(request: pytest.FixtureRequest) -> Iterator[IntercodeEnv]:
    e = intercode.make(request.param, dataset=testing.small_dataset(request.param)).unwrapped
    assert isinstance(e, IntercodeEnv)
    e.reset(options={"task": 0})
    e.step(WRITE[request.param])
    yield e
    e.close()


def agent_box(env: IntercodeEnv) -> Sandbox:
    """The sandbox the agent's actions run in (the SQL engine's, for SQL)."""
    if env.env_name == "bash":
        box = env._agent  # type: ignore[attr-defined]
    elif env.env_name == "python":
        box = env._boxes["agent"]  # type: ignore[attr-defined]
    else:
        box = env._agent._box  # type: ignore[attr-defined]
    assert isinstance(box, Sandbox)
    return box


def spare_of(env: IntercodeEnv) -> IntercodeEnv:
    """The spare the next fork takes (waits until it was begun)."""
    assert env._spares.pending
    spare = env._spares.pending[0].result()
    assert spare is not None
    return spare


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def bwrap_pid(box: Sandbox) -> int:
    proc = box._proc  # type: ignore[attr-defined]
    assert proc is not None
    return int(proc.pid)


def test_a_fork_begins_a_spare_and_the_next_fork_takes_it(env: IntercodeEnv) -> None:
    first = env.fork()
    try:
        spare = spare_of(env)
        second = env.fork()
        try:
            assert second is spare  # handed over, not a new environment
            assert len(env._spares.pending) == env.fork_spares  # refilled
            assert spare_of(env) is not spare
            name = env.env_name
            expected = env.step(READ[name])[0]
            assert first.step(READ[name])[0] == expected
            assert second.step(READ[name])[0] == expected
            # independent: the parent and the two forks do not see each other's actions
            second.step(CHANGE[name].format(who="second"))
            first.step(CHANGE[name].format(who="first"))
            assert env.step(READ[name])[0] == expected
            assert second.step(READ[name])[0] != first.step(READ[name])[0]
            assert second.turn == first.turn  # same history length, own episode
            assert agent_box(second) is not agent_box(env)
            assert agent_box(second) is not agent_box(first)
        finally:
            second.close()
    finally:
        first.close()


def test_the_spare_is_closed_with_its_environment(env: IntercodeEnv) -> None:
    env.fork().close()
    spare = spare_of(env)
    box = agent_box_begun(spare)
    pid = bwrap_pid(box)
    assert pid_alive(pid)
    others = [agent_box_begun(p.result()) for p in list(env._spares.pending)[1:]]
    env.close()
    assert not env._spares.pending
    assert not box.alive and not any(b.alive for b in others)
    assert not pid_alive(pid)  # killed and reaped: no sandbox outlives close()


def agent_box_begun(env: IntercodeEnv) -> Sandbox:
    """The agent sandbox a spare began (not started yet: no episode)."""
    if env.env_name == "bash":
        box = env._agent  # type: ignore[attr-defined]
    elif env.env_name == "python":
        box = env._boxes["agent"]  # type: ignore[attr-defined]
    else:
        box = env._session("agent")._box  # type: ignore[attr-defined]
    assert isinstance(box, Sandbox)
    return box


def test_a_fork_whose_spare_died_still_works(env: IntercodeEnv) -> None:
    env.fork().close()
    box = agent_box_begun(spare_of(env))
    os.kill(bwrap_pid(box), signal.SIGKILL)
    box._proc.wait()  # type: ignore[attr-defined]
    fork = env.fork()
    try:
        name = env.env_name
        assert fork.step(READ[name])[0] == env.step(READ[name])[0]
        assert agent_box(fork).alive
    finally:
        fork.close()


def test_fork_spare_off_keeps_none_and_closes_the_one_kept(env: IntercodeEnv) -> None:
    env.fork().close()
    box = agent_box_begun(spare_of(env))
    env.fork_spare = False
    assert not env._spares.pending and not box.alive
    fork = env.fork()
    try:
        assert not env._spares.pending
        name = env.env_name
        assert fork.step(READ[name])[0] == env.step(READ[name])[0]
        assert fork.fork_spare is True or os.environ.get("INTERCODE_FORK_SPARE") == "0"
    finally:
        fork.close()


def test_the_environment_variable_turns_the_spare_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_FORK_SPARE", "0")
    env = intercode.make("bash", dataset=testing.small_dataset("bash")).unwrapped
    try:
        assert isinstance(env, IntercodeEnv)
        assert env.fork_spare is False
        env.reset(options={"task": 0})
        env.fork().close()
        assert not env._spares.pending
    finally:
        env.close()


def test_the_number_of_spares_follows_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERCODE_FORK_SPARE", "3")
    env = intercode.make("bash", dataset=testing.small_dataset("bash")).unwrapped
    try:
        assert isinstance(env, IntercodeEnv)
        assert env.fork_spares == 3
        env.reset(options={"task": 0})
        fork = env.fork()
        assert len(env._spares.pending) == 3
        fork.close()  # its sandbox comes back as a spare: a fourth (one more at most)
        assert len(env._spares.pending) == 4
        kept = [agent_box_begun(spare_of(env))]
        env.fork_spares = 1  # the spares beyond it are closed, the first one begun kept
        assert len(env._spares.pending) == 1 and spare_of(env)._agent is kept[0]  # type: ignore[attr-defined]
        fork = env.fork()
        try:
            assert agent_box(fork) is kept[0] and len(env._spares.pending) == 1
        finally:
            fork.close()
    finally:
        env.close()


def test_begin_spare_makes_even_the_first_fork_take_a_spare(env: IntercodeEnv) -> None:
    env.begin_spare()
    spare = spare_of(env)
    fork = env.fork()
    try:
        assert fork is spare
        name = env.env_name
        assert fork.step(READ[name])[0] == env.step(READ[name])[0]
    finally:
        fork.close()


def only_spare(env: IntercodeEnv) -> IntercodeEnv:
    """Wait for every spare; close all but the last one kept (the next fork takes it)."""
    spares = [pending.result() for pending in env._spares.pending]
    for _ in spares[:-1]:
        dropped = env._spares.pending.popleft().result()
        if dropped is not None:
            dropped.close()
    last = spares[-1]
    assert last is not None
    return last


def test_a_closed_forks_sandbox_comes_back_as_a_spare_in_the_parents_state(
        env: IntercodeEnv) -> None:
    """Closing a fork gives its agent sandbox back to its parent as a spare (reset): the
    next fork runs in it, in the parent's state, not in the closed fork's."""
    name = env.env_name
    env.fork_spares = 1
    first = env.fork()
    first.step(CHANGE[name].format(who="first"))
    box = agent_box(first)
    first.close()
    assert len(env._spares.pending) == 2  # the spare begun by the fork, and the one given back
    recycled = only_spare(env)
    assert agent_box(recycled) is box and box.alive
    fork = env.fork()
    try:
        assert fork is recycled
        assert fork.step(READ[name])[0] == env.step(READ[name])[0]
        fork.step(CHANGE[name].format(who="fork"))
        assert fork.step(READ[name])[0] != env.step(READ[name])[0]  # independent again
    finally:
        fork.close()


def test_a_fork_closed_on_another_thread_is_not_recycled(env: IntercodeEnv) -> None:
    """Only the thread that forked gives the sandbox back (the spares are that thread's
    environment's); closed elsewhere, the fork's sandboxes stop."""
    import threading

    fork = env.fork()
    box = agent_box(fork)
    before = len(env._spares.pending)
    closer = threading.Thread(target=fork.close)
    closer.start()
    closer.join()
    assert len(env._spares.pending) == before
    assert not box.alive


def test_a_spare_prepared_from_an_earlier_state_is_reset() -> None:
    """A Python spare replays the parent's actions in the background; a fork replays only
    those taken since, and one whose parent restored an earlier state since starts over
    (the spare's replay is not a beginning of the parent's actions any more)."""
    env = intercode.make("python", dataset=testing.small_dataset("python")).unwrapped
    assert isinstance(env, IntercodeEnv)
    try:
        env.fork_spares = 1
        env.reset(options={"task": 0})
        env.step("L = []")
        snap = env.snapshot()
        env.step("L.append('a')")
        env.fork().close()
        env.step("L.append('b')")  # after the spare's replay: replayed by the fork
        only_spare(env)
        fork = env.fork()
        try:
            assert fork.step("print(L)")[0] == "['a', 'b']\n"
        finally:
            fork.close()
        env.restore(snap)
        env.step("L.append('c')")
        only_spare(env)  # replayed ['a', 'b'] when the fork above was closed
        fork = env.fork()
        try:
            assert fork.step("print(L)")[0] == "['c']\n"
        finally:
            fork.close()
    finally:
        env.close()


def test_a_python_fork_replays_in_one_request_or_one_by_one_when_that_fails() -> None:
    """A fork replays the episode's actions in one ``replay`` request; when that does
    not run them all (an action ended the interpreter, one ran past the time limit), it
    resets the fork and replays them one by one: the fork's state is the parent's."""
    from intercode.envs.python import PythonEnv
    from intercode.sandbox.limits import Limits

    env = PythonEnv(testing.small_dataset("python"), limits=Limits(timeout=1.0))
    env.fork_spares = 0
    try:
        env.reset(options={"task": 0})
        env.step("L = [1]")
        env.step("L.append(2)")
        fork = env.fork()
        try:
            assert fork.step("print(L)")[0] == "[1, 2]\n"
        finally:
            fork.close()
        env.step("import os\nos._exit(3)")  # the parent's interpreter restarts empty
        env.step("L = ['after']")
        env.step("import time\nwhile True: time.sleep(0.05)")  # cut at the time limit
        env.step("L.append('late')")
        fork = env.fork()
        try:
            assert fork.step("print(L)")[0] == env.step("print(L)")[0] == "['after', 'late']\n"
        finally:
            fork.close()
        env.fork_spares = 1  # a spare prepared in the background falls back the same way
        env.fork().close()
        spare = only_spare(env)
        fork = env.fork()
        try:
            assert fork is spare
            assert fork.step("print(L)")[0] == "['after', 'late']\n"
        finally:
            fork.close()
    finally:
        env.close()
