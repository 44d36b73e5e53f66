"""Every environment in Gymnasium's vector envs, sync and async (with its default shared
memory): Unicode observations arrive whole, gold actions score 1, and starting is quick."""

from __future__ import annotations

import gymnasium as gym
import pytest

import intercode  # noqa: F401  (registers the ids)
from intercode import testing
from intercode.benchmarks import get
from intercode.envs.bash import BashEnv
from intercode.envs.bounds import NOTE_CHARS
from intercode.envs.core.ctf import WRONG_FLAG
from intercode.envs.registration import env_id
from intercode.sandbox.limits import Limits
from intercode.sql.results import MAX_RESULT_CHARS

MODES = ("sync", "async")
# an action printing spaces, newlines and non-ASCII text, and what its observation shows
UNICODE = {
    "bash": ("printf 'héllo wörld\\n✓ é <&>\\n'", "héllo wörld\n✓ é <&>\n"),
    "ctf": ("printf 'héllo wörld\\n✓ é <&>\\n'", "héllo wörld\n✓ é <&>\n"),
    "python": ("print('héllo wörld\\n✓ é <&>')", "héllo wörld\n✓ é <&>\n"),
    "sql": ("SELECT 'héllo wörld ✓ é <&>', 1", "[('héllo wörld ✓ é <&>', 1)]"),
}


def make_vec(name: str, mode: str, **vector_kwargs: object) -> gym.vector.VectorEnv:
    return gym.make_vec(env_id(name), num_envs=2, vectorization_mode=mode,
                        vector_kwargs=vector_kwargs, dataset=testing.small_dataset(name))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(UNICODE))
def test_gold_and_unicode_actions_in_a_vector_env(name, mode):
    benchmark = get(name)
    envs = make_vec(name, mode)  # the start-up time: perf/bench_vector.py
    try:
        index = envs.call("available_tasks")[0][0]
        dataset = envs.call("dataset")[0]
        task = dataset[index]
        obs, info = envs.reset(options={"task": index})
        assert obs == (task.query, task.query) and list(info["task"]) == [index, index]

        action, shown = UNICODE[name]
        obs, reward, terminated, truncated, info = envs.step((benchmark.gold_action(task),
                                                               action))
        assert obs[1] == shown and reward[1] == 0.0 and not terminated[1]
        assert not truncated.any()
        if name == "ctf":  # the gold action submits the flag
            assert reward[0] == 1.0 and terminated[0]
            obs, reward, terminated, _, _ = envs.step(("ls", "submit picoCTF{wrong flag}"))
            assert obs[1] == WRONG_FLAG  # and the first env was reset on a random task:
            assert obs[0] in {t.query for t in dataset}
            assert list(reward) == [0.0, 0.0] and not terminated.any()
        else:
            assert reward[0] == 0.0 and not terminated[0]
            submit = benchmark.gold_submit(task)
            obs, reward, terminated, _, info = envs.step((submit, submit))
            assert reward[0] == 1.0 and info["success"][0] and terminated[0]
            assert reward[1] < 1.0 and not info["success"][1] and terminated[1]
    finally:
        envs.close()


def test_observation_spaces_follow_the_limits():
    bash = BashEnv("bash-demo", limits=Limits(output=4096))
    assert bash.observation_space.max_length == 4096 + NOTE_CHARS
    assert BashEnv("bash-demo").observation_space.max_length == Limits().output + NOTE_CHARS
    sql = gym.make(env_id("sql"), dataset="spider-dev")
    try:
        assert sql.observation_space.max_length == MAX_RESULT_CHARS + NOTE_CHARS
    finally:
        sql.close()


def test_a_longer_observation_is_cut_with_a_note_and_stays_in_the_space():
    env = BashEnv("bash-demo")
    env._limit_observations(200)
    assert env._fit_observation("é" * 200) == "é" * 200
    cut = env._fit_observation("é" * 1000)
    assert len(cut) == 200 and cut.startswith("é" * 50)
    assert cut.endswith("[intercode] the observation was cut here: it had 1000 characters, "
                        "the observation space holds 200")
    assert env.observation_space.contains(cut)


def test_a_full_megabyte_observation_passes_the_shared_memory_whole():
    action = "python3 -c \"print('é✓ ' * 400000)\""  # 2.4 MB, cut at the 1 MiB output limit
    seen = {}
    for mode in MODES:
        envs = make_vec("bash", mode)
        try:
            envs.reset(options={"task": 0})
            seen[mode], *_ = envs.step((action, "echo done"))
        finally:
            envs.close()
    assert seen["async"] == seen["sync"]
    big = seen["async"][0]
    assert big.startswith("é✓ é✓") and "output truncated: showing the first 1048576" in big
    assert seen["async"][1] == "done\n"


def test_async_with_the_forkserver_start_method():
    # Python 3.14's default on Linux: the shared memory and the env factory pickle
    envs = make_vec("bash", "async", context="forkserver")
    try:
        envs.reset(options={"task": 0})
        obs, *_ = envs.step((UNICODE["bash"][0],) * 2)
        assert obs == (UNICODE["bash"][1],) * 2
    finally:
        envs.close()
