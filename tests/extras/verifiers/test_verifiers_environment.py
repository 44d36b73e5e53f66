"""intercode under verifiers 0.4: rollouts through verifiers' own eval runner.

verifiers cannot share the main test environment (it pins mcp==2.0.0 and openai<3), so
these tests run in an environment of their own (docs/training.md, scripts/extra-test
verifiers) and are skipped elsewhere; with INTERCODE_REQUIRE_VERIFIERS=1 a missing
verifiers is a failure. The model is intercode's scripted Chat Completions server; it
plays scripted tool calls per task, and each rollout's reward must be the one the same
actions earn on ``intercode.make`` directly.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading

import pytest

if os.environ.get("INTERCODE_REQUIRE_VERIFIERS") == "1":  # CI: missing is a failure
    import verifiers.v1 as vf
else:
    vf = pytest.importorskip(
        "verifiers.v1", reason="verifiers 0.4 is not installed (it needs an environment of its "
                               "own: pip install 'intercode[verifiers]'; docs/training.md)")

import intercode
from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.envs.bounds import MAX_ACTION
from intercode.errors import ConfigError
from intercode.integrations.verifiers import TASKSET_ID, load_environment
from intercode.integrations.verifiers import pool as pools
from intercode.llm.scripted_server import Reply, ScriptedChatServer, call

KEY_VARIABLE = "INTERCODE_VERIFIERS_TEST_KEY"
WRONG = "echo wrong-answer"


@pytest.fixture(autouse=True)
def fresh_pools(monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, "test-key")
    pools.close_pools()
    yield
    pools.close_pools()


def queries() -> dict[str, int]:
    return {f"Task: {task.query}": task.index for task in load_dataset("bash-demo", "bash")}


def scripted(plan):
    """A responder playing ``plan(task index)``'s tool calls in order, one per reply,
    then a reply without a call."""
    by_query = queries()

    def respond(request):
        messages = request["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        calls = plan(by_query[user])
        answered = sum(1 for m in messages if m["role"] == "tool")
        if answered < len(calls):
            return Reply(tool_calls=(calls[answered],))
        return Reply("done")

    return respond


def evaluate(server, tmp_path, taskset, **run):
    """verifiers' own eval runner (in process) over ``taskset`` against ``server``."""
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    config = EvalConfig.model_validate({
        "env": {"taskset": {"id": TASKSET_ID, **taskset}}, "model": "scripted",
        "client": {"base_url": server.url, "api_key_var": KEY_VARIABLE},
        "push": False, "rich": None, "output_dir": str(tmp_path), **run})
    return asyncio.run(run_eval(config))


def intercode_rewards(mode, actions_of, indices, max_turns=None):
    """The reward each task's actions earn on intercode.make: the submission's, else
    the final state's."""
    env = intercode.make("bash", dataset="bash-demo", reward=mode, max_turns=max_turns)
    rewards = {}
    try:
        for index in indices:
            env.reset(options={"task": index})
            reward, ended = 0.0, False
            for action in actions_of(index):
                _obs, reward, terminated, truncated, _info = env.step(action)
                if terminated or truncated:
                    ended = terminated
                    break
            if not ended:
                reward = env.unwrapped.evaluate().reward
            rewards[index] = float(reward)
    finally:
        env.close()
    return rewards


def gold_or_wrong(index):
    task = load_dataset("bash-demo", "bash")[index]
    return [get("bash").gold_action(task) if index % 2 == 0 else WRONG, "submit"]


def as_calls(actions):
    return [call("submit", {}) if a == "submit" else call("execute", {"code": a})
            for a in actions]


@pytest.mark.parametrize("mode", ["paper", "success"])
def test_gold_and_wrong_actions_score_as_intercode_scores_them(tmp_path, mode):
    with ScriptedChatServer(scripted(lambda i: as_calls(gold_or_wrong(i)))) as server:
        episodes = evaluate(server, tmp_path, {"benchmark": "bash", "dataset": "bash-demo",
                                               "reward": mode},
                            max_concurrent=4, num_rollouts=2)
    got: dict[int, list[float]] = {}
    for episode in episodes:
        assert episode.ok, episode.errors
        (trace,) = episode.traces
        assert trace.metrics["submitted"] == 1.0 and trace.metrics["fault"] == 0.0
        got.setdefault(episode.task.data.task, []).append(trace.reward)
    expected = intercode_rewards(mode, gold_or_wrong, sorted(got))
    assert got == {index: [reward, reward] for index, reward in expected.items()}
    assert all(expected[i] == 1.0 for i in expected if i % 2 == 0)  # the gold solves it
    assert any(expected[i] < 1.0 for i in expected if i % 2 == 1)  # the wrong answer fails


def test_each_concurrent_rollout_has_an_environment_of_its_own(tmp_path, monkeypatch):
    lent: set[int] = set()
    shared: list[int] = []
    guard = threading.Lock()
    acquire, release = pools.EnvPool.acquire, pools.EnvPool.release

    async def tracked_acquire(self):
        env = await acquire(self)
        with guard:
            if id(env) in lent:
                shared.append(id(env))
            lent.add(id(env))
        return env

    def tracked_release(self, env):
        with guard:
            lent.discard(id(env))
        release(self, env)

    monkeypatch.setattr(pools.EnvPool, "acquire", tracked_acquire)
    monkeypatch.setattr(pools.EnvPool, "release", tracked_release)
    with ScriptedChatServer(scripted(lambda i: as_calls(gold_or_wrong(i)))) as server:
        episodes = evaluate(server, tmp_path, {"benchmark": "bash", "dataset": "bash-demo"},
                            max_concurrent=8, num_rollouts=3)
    assert shared == []
    assert len(episodes) == 3 * len(queries()) and all(e.ok for e in episodes)
    (pool,) = pools._pools.values()
    assert 1 <= len(pool.idle) <= 8  # warm environments kept, at most one per rollout in flight


BAD_CALLS = [
    (call("execute", {"code": 123}), "error: execute needs a non-empty string"),
    (call("execute", "{not json"), "not valid JSON"),
    (call("execute", "[1, 2]"), "must be a JSON object"),
    (call("execute", {"code": "x" * (MAX_ACTION + 1)}), f"at most {MAX_ACTION}"),
    (call("rm_rf", {}), "error: unknown tool 'rm_rf'"),
]


def test_bad_tool_calls_are_tool_results_and_the_final_state_is_scored(tmp_path):
    server = ScriptedChatServer(scripted(lambda i: [c for c, _ in BAD_CALLS]))
    with server:
        episodes = evaluate(server, tmp_path, {"benchmark": "bash", "dataset": "bash-demo",
                                               "reward": "success"},
                            select={"limit": 1})
    (episode,) = episodes
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    assert trace.metrics == {"submitted": 0.0, "turns": float(len(BAD_CALLS)), "fault": 0.0}
    index = episode.task.data.task
    assert trace.reward == intercode_rewards("success", lambda i: [], [index])[index]
    tools = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tools) == len(BAD_CALLS)
    for message, (_call, said) in zip(tools, BAD_CALLS, strict=True):
        assert said in message["content"]


def test_the_turn_limit_ends_the_episode_and_scores_its_final_state(tmp_path):
    server = ScriptedChatServer(scripted(lambda i: [call("execute", {"code": f"echo {n}"})
                                                    for n in range(5)]))
    with server:
        episodes = evaluate(server, tmp_path, {"benchmark": "bash", "dataset": "bash-demo",
                                               "reward": "paper", "max_turns": 2},
                            select={"limit": 1})
    (episode,) = episodes
    (trace,) = episode.traces
    assert episode.ok and trace.metrics["turns"] == 2.0 and trace.metrics["submitted"] == 0.0
    index = episode.task.data.task
    expected = intercode_rewards("paper", lambda i: ["echo 0", "echo 1"], [index],
                                 max_turns=2)[index]
    assert trace.reward == expected
    assert len(server.requests) == 2  # no model call after the second action


def test_an_environment_failure_scores_zero_and_is_not_raised(tmp_path, monkeypatch):
    async def broken(self):
        raise RuntimeError("the sandbox could not start")

    monkeypatch.setattr(pools.EnvPool, "acquire", broken)
    with ScriptedChatServer(scripted(lambda i: as_calls(gold_or_wrong(0)))) as server:
        episodes = evaluate(server, tmp_path, {"benchmark": "bash", "dataset": "bash-demo",
                                               "reward": "success"}, select={"limit": 2})
    for episode in episodes:
        assert episode.ok, episode.errors
        (trace,) = episode.traces
        assert trace.reward == 0.0 and trace.metrics["fault"] == 1.0


def test_a_failing_step_ends_the_episode_and_scores_zero(tmp_path, monkeypatch):
    real_make = intercode.make

    def make(*args, **kwargs):
        env = real_make(*args, **kwargs)

        def step(action):
            raise OSError("the sandbox died")

        env.step = step
        return env

    monkeypatch.setattr(intercode, "make", make)
    server = ScriptedChatServer(scripted(lambda i: as_calls(gold_or_wrong(0))))
    with server:
        episodes = evaluate(server, tmp_path, {"benchmark": "bash", "dataset": "bash-demo"},
                            select={"limit": 1})
    (episode,) = episodes
    (trace,) = episode.traces
    assert episode.ok and trace.reward == 0.0 and trace.metrics["fault"] == 1.0
    assert len(server.requests) == 1  # the failure ended the episode: no further turn


def test_verifiers_loads_it_by_its_taskset_id():
    from verifiers.v1.utils.loaders import default_harness_id, environment_class

    for taskset_id in (TASKSET_ID, "intercode-verifiers"):
        config = vf.resolve_env_config({"taskset": {"id": taskset_id, "benchmark": "bash",
                                                    "dataset": "bash-demo:train:seed=3"}})
        env = vf.load_environment(config)
        assert type(env).__name__ == "IntercodeEnv"
        assert default_harness_id(taskset_id) == taskset_id
        assert environment_class(taskset_id) is type(env)
        tasks = list(env.taskset)
        assert tasks and {t.data.dataset for t in tasks} == {"bash-demo:train:seed=3"}
        assert config.agent.runtime.type == "subprocess"
    direct = load_environment("bash", "bash-demo", reward="baseline", max_turns=3)
    task = next(iter(direct.taskset))
    assert (task.data.reward, task.data.max_turns) == ("baseline", 3)
    assert task.data.prompt.startswith("Task: ") and "execute(code)" in task.data.system_prompt
    assert json.loads(json.dumps(task.data.model_dump()))["task"] == task.data.task


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"benchmark": "nope"}, "nope"),
    ({"reward": "bogus"}, "bogus"),
    ({"max_turns": 0}, "max_turns"),
    ({"dataset": "no-such-dataset"}, "no-such-dataset"),
])
def test_wrong_settings_are_one_line_errors(kwargs, said):
    with pytest.raises(ConfigError, match=said) as info:
        load_environment(**kwargs)
    assert "\n" not in str(info.value)
