"""The Bash environment end to end: rewards on real tasks, quirks mode, cleanup."""

from __future__ import annotations

import subprocess

import pytest

from intercode.envs.bash import BashEnv
from intercode.envs.bash_upstream import upstream_simplify_path
from intercode.envs.core.bash import IGNORED_NAMES


@pytest.fixture(scope="module")
def env():
    e = BashEnv("bash-demo")
    yield e
    e.close()


def test_every_demo_gold_scores_one(env):
    for task in env.dataset:
        env.reset(options={"task": task.index})
        env.step(task.gold)
        _, reward, _, _, info = env.step("submit")
        assert reward == 1.0 and info["success"], (task.index, info)


def test_a_partly_right_answer(env):
    # task 3: create /project/backup and copy every .log file into it
    env.reset(options={"task": 3})
    env.step("mkdir -p /project/backup && cp /project/logs/app.log /project/backup/")
    _, reward, _, _, info = env.step("submit")
    # the diff is the same (one untracked dir), but its content differs; output equal ("")
    assert info["reward_parts"] == {"file_diff": 0.33, "file_changes": 0.0,
                                    "answer_similarity": 0.33}
    assert reward == pytest.approx(0.67) and not info["success"]


def test_missing_changes_cost_the_diff_part(env):
    env.reset(options={"task": 3})
    env.step("echo nothing")
    ev = env.evaluate()
    assert ev.info["diff_miss"] == [["project/backup/", "??"]]
    assert ev.info["reward_parts"]["file_diff"] == 0.05  # 0.33 * (1 - erf(1))


def test_submit_first_compares_the_query_with_the_gold_output(env):
    env.reset(options={"task": 0})
    _, reward, _, _, info = env.step("submit")
    assert info["reward_parts"]["answer_similarity"] == 0.0
    assert reward == pytest.approx(0.67)


def test_gold_runs_once_per_episode_in_its_own_sandbox(env):
    env.reset(options={"task": 5})
    env.step("touch /project/agent-only")
    first = env.evaluate()
    second = env.evaluate()
    assert first.reward == second.reward
    assert ["project/agent-only", "??"] in first.info["diff_extra"]
    gold = env._sandbox("gold")
    assert ["project/agent-only", "??"] not in [[c.path, c.code] for c in gold.diff(IGNORED_NAMES)]


def test_state_is_pristine_at_every_reset(env):
    env.reset(options={"task": 0})
    env.step("rm -rf /project/src; echo x > /tmp/junk; cd /project; export X=1")
    env.reset(options={"task": 0})
    obs, *_ = env.step("pwd; echo \"[$X]\"; ls /project/src /tmp")
    assert obs == "/\n[]\n/project/src:\napp.py\nutil.py\n\n/tmp:\n"
    assert env.diff() == []


def test_timeout_is_an_observation():
    from intercode.sandbox.limits import Limits

    e = BashEnv("bash-demo", limits=Limits(timeout=0.5))
    try:
        e.reset(options={"task": 0})
        obs, reward, terminated, _, info = e.step("sleep 30")
        assert info["timed_out"] is True and "timed out" in obs
        assert reward == 0.0 and not terminated
        assert e.step("echo next")[0] == "next\n"
    finally:
        e.close()


def test_upstream_quirks_mode():
    e = BashEnv("bash-demo", upstream_quirks=True)
    try:
        e.reset(options={"task": 0})
        # Docker's argument splitting ends the quoted -c argument at the inner quote:
        # bash gets `-c 'echo a'` and `b` becomes $0
        obs, *_ = e.step('echo "a   b"')
        assert obs == "a\n"
        obs, *_ = e.step("echo \"it's\"")
        assert obs == "Malformed command"
        e.step("cd /project/src")
        obs, *_ = e.step("pwd; X=1")
        assert obs == "/project/src\n"
        obs, *_ = e.step("echo [$X]")  # nothing persists between actions
        assert obs == "[]\n"
        e.step("cd ../docs")
        assert e.step("ls")[0] == "README.md\n"
    finally:
        e.close()


@pytest.mark.parametrize(("current", "arg", "expected"), [
    ("/", "", "/"), ("/", "testbed", "/testbed"), ("/a/b", "..", "/a"), ("/a", "/x/./y", "/x/y"),
    ("/", "../..", "/"), ("/a", "b//c/", "/a/b/c"),
])
def test_upstream_cd_emulation(current, arg, expected):
    assert upstream_simplify_path(current, arg) == expected


def test_close_stops_every_sandbox():
    e = BashEnv("bash-demo", gold_cache=False)  # the gold runs in its own sandbox
    e.reset(options={"task": 0})
    e.step("echo hi")
    e.evaluate()
    boxes = [e._agent, e._gold]
    pids = [b._proc.pid for b in boxes]
    e.close()
    for pid in pids:
        assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0


def test_episodes_leave_no_events_queued_on_the_host(env):
    """The supervisor's answer to the freeze after an episode's last action is taken at
    the next action, even when a reset came between: a long run holds no growing queue
    (each one cost every later request a scan of the whole queue)."""
    for _ in range(3):
        for task in env.dataset:
            env.reset(options={"task": task.index})
            env.step("true")
            env.step("submit")
    env.reset(options={"task": 0})
    env.step("true")
    channel = env._agent._channel
    assert [e for e in channel.events if e.get("ev") == "frozen"] == []
    assert len(channel.events) <= 1


@pytest.mark.parametrize("seed", [None, 3])
def test_a_fork_draws_the_same_tasks_as_its_parent(seed):
    """``fork()`` copies the random generator (made on the spot if the parent had none),
    as Gymnasium's setter does: the fork's ``np_random_seed`` is -1."""
    env = BashEnv("bash-demo")
    try:
        env.reset(seed=seed) if seed is not None else env.reset(options={"task": 0})
        fork = env.fork()
        try:
            assert fork.np_random_seed == -1
            draws = [[e.reset()[1]["task"] for _ in range(6)] for e in (env, fork)]
            assert draws[0] == draws[1]
        finally:
            fork.close()
    finally:
        env.close()
