"""Snapshots, restores and forks on every registered environment (property-based).

For random action sequences from a small per-environment alphabet: acting k steps,
taking a snapshot, acting on, restoring and acting the same rest again gives the same
observations and rewards; a fork and its parent do not see each other's later
actions; one snapshot survives many restores. Environments that cannot snapshot
(plugins) must say so with ``SnapshotUnsupported``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import intercode
from intercode import testing
from intercode.benchmarks import benchmarks
from intercode.envs.base import IntercodeEnv
from intercode.errors import ConfigError, SnapshotUnsupported

SHELL = ["echo a >> /tmp/f", "cat /tmp/f", "cd /tmp", "cd /", "pwd", "X=$((X+1)); echo $X",
         "rm -f /tmp/f", "mkdir -p /tmp/d && touch /tmp/d/$X && ls /tmp/d", "f() { echo $X; }",
         "f", "alias q='echo quiet'", "shopt -s expand_aliases", "set -o noglob",
         "set +o noglob", "umask 077; touch /tmp/u; ls -l /tmp/u | cut -c1-10", "cd -"]
ALPHABETS = {
    "bash": SHELL,
    "ctf": SHELL,
    "swe": SHELL,
    "python": ["x = globals().get('x', 0) + 1", "print(x)", "l = [x] * 2", "print(l)",
               "def f(a): return a + x", "f(2)", "import os; os.chdir('/tmp')",
               "print(os.getcwd())", "open('/tmp/f', 'a').write('a')",
               "import random; print(random.random())",
               "print(open('/tmp/f').read())", "del x", "1/0"],
    "sql": ["CREATE TABLE IF NOT EXISTS t(a)", "INSERT INTO t VALUES (1)",
            "SELECT count(*), sum(a) FROM t", "DELETE FROM t", "UPDATE t SET a = a + 1",
            "CREATE TEMP TABLE IF NOT EXISTS tt(b)", "INSERT INTO tt VALUES (x'00ff')",
            "SELECT * FROM tt", "SHOW TABLES", "DROP TABLE IF EXISTS t"],
    "sql-mysql": ["CREATE TABLE IF NOT EXISTS t(a INT)", "INSERT INTO t VALUES (1)",
                  "SELECT count(*), sum(a) FROM t", "DELETE FROM t", "UPDATE t SET a = a + 1",
                  "CREATE TABLE IF NOT EXISTS u(id INT AUTO_INCREMENT PRIMARY KEY, "
                  "b VARBINARY(4))", "INSERT INTO u(b) VALUES (x'00ff')", "DELETE FROM u",
                  "SET @x = COALESCE(@x, 0) + 1, @y = 1.5e0, @z = x'00ff', @w = 2.50",
                  "SET SESSION sql_mode = 'ANSI_QUOTES'", "SET SESSION sql_mode = DEFAULT",
                  "SELECT \"a\"", "SHOW TABLES", "DROP TABLE IF EXISTS t"],
}
# (OLDPWD and the shell's own descriptors, listed by the shell itself (an `ls` in a
# pipeline may see the pipe's descriptor): a restored shell starts as if started in its
# directory, see inbox/shell.py Shell.begin)
SHELL_PROBE = ("pwd; echo X=$X; cat /tmp/f; ls /tmp/d; alias; umask; declare -f; "
               "set -o | grep glob; declare -p OLDPWD; fds=(/proc/$$/fd/*); echo ${fds[@]##*/}")
#: Actions that show the state (run after every sequence, so that any difference shows).
PROBES = {
    "bash": [SHELL_PROBE],
    "ctf": [SHELL_PROBE],
    "swe": [SHELL_PROBE],
    "python": ["import os as _os; print(sorted(k for k in globals() if k[0] != '_'), "
               "globals().get('x'), globals().get('l'), _os.getcwd(), "
               "_os.path.exists('/tmp/f') and open('/tmp/f').read())"],
    "sql": ["SELECT group_concat(name) FROM sqlite_master", "SELECT count(*), sum(a) FROM t",
            "SELECT hex(b) FROM tt"],
    "sql-mysql": ["SHOW TABLES", "SELECT count(*), sum(a) FROM t", "SELECT id, hex(b) FROM u",
                  "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_NAME = "
                  "'u' AND TABLE_SCHEMA = DATABASE()", "SELECT @x, @y, @z, @w, @@sql_mode"],
}
SNAPSHOTTING = sorted(ALPHABETS)
OTHERS = sorted(b.name for b in benchmarks() if b.name not in ALPHABETS)
MYSQL = "sql-mysql"  # the SQL environment on the MySQL backend (a real MariaDB)
FAST = settings(max_examples=5, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@pytest.fixture(params=SNAPSHOTTING, scope="module")
def env(request: pytest.FixtureRequest) -> Iterator[IntercodeEnv]:
    if request.param == MYSQL:
        e = intercode.make("sql", dataset=testing.small_dataset("sql"), backend="mysql",
                           mysql_url=request.getfixturevalue("mysql_url")).unwrapped
    else:
        e = intercode.make(request.param, dataset=testing.small_dataset(request.param)).unwrapped
    assert isinstance(e, IntercodeEnv)
    e.reset(options={"task": 0})
    yield e
    e.close()


def kind(env: IntercodeEnv) -> str:
    """The alphabet's key: the environment's name (``sql-mysql`` on the MySQL backend)."""
    backend = getattr(env, "backend", None)
    return MYSQL if getattr(backend, "name", "") == "mysql" else env.env_name


def actions(draw: st.DrawFn, name: str, low: int, high: int) -> list[str]:
    return draw(st.lists(st.sampled_from(ALPHABETS[name]), min_size=low, max_size=high))


def play(env: IntercodeEnv, steps: list[str]) -> list[tuple[str, float, bool]]:
    return [(obs, float(r), term) for obs, r, term, _t, _i in map(env.step, steps)]


@st.composite
def episodes(draw: st.DrawFn, name: str) -> tuple[list[str], list[str]]:
    return actions(draw, name, 0, 4), actions(draw, name, 1, 4)


@FAST
@given(data=st.data())
def test_restore_replays_the_same_observations_and_rewards(env: IntercodeEnv,
                                                           data: st.DataObject) -> None:
    before, after = data.draw(episodes(kind(env)))
    after += PROBES[kind(env)]
    env.reset(options={"task": 0})
    play(env, before)
    snap = env.snapshot()
    first = play(env, after)
    first_reward = env.evaluate().reward
    env.restore(snap)
    assert env.turn == len(before)
    assert [a for a, _o in env.history] == before
    assert play(env, after) == first
    assert env.evaluate().reward == first_reward
    snap.release()


@settings(FAST, max_examples=3)
@given(data=st.data())
def test_fork_and_parent_do_not_see_each_other(env: IntercodeEnv, data: st.DataObject) -> None:
    before, after = data.draw(episodes(kind(env)))
    env.reset(options={"task": 0})
    play(env, before)
    probe = PROBES[kind(env)]
    fork = env.fork()
    try:
        assert fork.turn == env.turn and fork.history == env.history
        expected = play(env, probe)
        play(fork, after)
        assert play(env, probe) == expected
        play(env, after)
        assert play(fork, probe) == play(env, probe)
    finally:
        fork.close()


def test_a_snapshot_survives_many_restores(env: IntercodeEnv) -> None:
    name = kind(env)
    env.reset(options={"task": 0})
    play(env, ALPHABETS[name][:3])
    snap = env.snapshot()
    probe = PROBES[name]
    expected = play(env, probe)
    for action in ALPHABETS[name] * 2:
        env.restore(snap)
        assert play(env, probe) == expected
        play(env, [action])
    snap.release()
    assert snap.released


def test_release_is_idempotent_and_reset_releases(env: IntercodeEnv) -> None:
    env.reset(options={"task": 0})
    snap, kept = env.snapshot(), env.snapshot()
    snap.release()
    snap.release()
    env.reset(options={"task": 0})
    assert kept.released


@pytest.mark.parametrize("name", OTHERS)
def test_environments_without_snapshots_say_so(name: str) -> None:
    e = intercode.make(name, dataset=testing.small_dataset(name)).unwrapped
    assert isinstance(e, IntercodeEnv)
    try:
        e.reset(options={"task": 0})
        with pytest.raises(SnapshotUnsupported, match="cannot snapshot"):
            e.snapshot()
        with pytest.raises(SnapshotUnsupported):
            e.fork()
    finally:
        e.close()


def test_a_collected_snapshot_is_freed_on_the_environments_next_call(env: IntercodeEnv) -> None:
    """The garbage collector may run in the middle of a sandbox request (or on another
    thread): the finalizer only queues the state; the environment frees it itself."""
    env.reset(options={"task": 0})
    snap = env.snapshot()
    state = snap.state
    cycle: list[object] = [snap]
    cycle.append(cycle)
    del snap, cycle
    gc.collect()
    assert env._snapshots.pending == [state]
    assert not getattr(state, "released", False)
    env.step(ALPHABETS[kind(env)][0])
    assert env._snapshots.pending == []


def test_fork_into_a_warm_environment(env: IntercodeEnv) -> None:
    env.reset(options={"task": 0})
    play(env, ALPHABETS[kind(env)][:2])
    warm = env.sibling()
    try:
        warm.reset(options={"task": 0})
        play(warm, ALPHABETS[kind(env)][2:4])
        assert env.fork(into=warm) is warm
        assert warm.task == env.task and warm.history == env.history
        assert play(warm, PROBES[kind(env)]) == play(env, PROBES[kind(env)])
        with pytest.raises(ConfigError, match="same class and dataset"):
            env.fork(into=env)
    finally:
        warm.close()


def test_released_snapshots_are_not_reported_as_background_processes(env: IntercodeEnv) -> None:
    env.reset(options={"task": 0})
    for _ in range(3):
        snap = env.snapshot()
        env.restore(snap)
        snap.release()
    snap = env.snapshot()
    env.restore(snap)
    assert "background" not in env.step(PROBES[kind(env)][0])[0]
