"""The example plugin examples/intercode-node: discovered by its entry point, passes the
contract checks, and its scoring cannot be swayed by the agent's code.

CI installs it (scripts/setup test: ``pip install -e examples/intercode-node`` and the
Debian package ``nodejs``).
"""

from __future__ import annotations

import json
import math
import time

import gymnasium as gym
import pytest

pytest.importorskip("intercode_node", reason="the example plugin is not installed: "
                    "pip install -e examples/intercode-node (scripts/setup test does)")

from intercode_node.env import NodeEnv, same

import intercode
from intercode import testing
from intercode.benchmarks import get, names

# task 0: sumSquares; tests sumSquares([1, 2]) -> 5, ([]) -> 0, ([-3, 4, 0.5]) -> 25.25
RIGHT = "function sumSquares(arr) { return arr.reduce((s, x) => s + x * x, 0); }"


@pytest.fixture(scope="module")
def env():
    e = gym.make("intercode/node-v0", test_timeout=0.5)
    yield e
    e.close()


def submit(env, *actions: str, name: str = "sumSquares", task: int = 0):
    """Reset on ``task``, run ``actions``, submit ``name``: (reward, info)."""
    env.reset(options={"task": task})
    for action in actions:
        env.step(action)
    _, reward, terminated, _, info = env.step(f"submit {name}")
    assert terminated
    return reward, info


def test_the_entry_point_is_discovered():
    assert "node" in names()
    assert get("node").gym_id == "intercode/node-v0"
    assert get("node").env_class() is NodeEnv


def test_it_passes_the_contract_checks():
    testing.check_benchmark("node")


def test_every_gold_scores_one():
    report = testing.check_golds("node")
    assert report["tasks"] >= 20 and report["scored_one"] == report["tasks"]


def test_every_task_has_three_tests_or_more():
    ds = intercode.load_dataset("node-basic")
    assert len(ds) >= 20 and all(len(t.tests) >= 3 for t in ds)


def test_intercode_eval_with_the_gold_agent_scores_every_task(tmp_path):
    from intercode.cli import main

    assert main(["eval", "node", "--agent", "gold", "--output", str(tmp_path / "run")]) == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").open()]
    assert len(records) == len(intercode.load_dataset("node-basic"))
    assert all(r["status"] == "ok" and r["reward"] == 1.0 for r in records)


# -- the interpreter ---------------------------------------------------------------------


def test_declarations_persist_and_values_print_like_a_repl(env):
    env.reset(options={"task": 0})
    assert env.step("function f(a) { return a * 2 }")[0] == ""
    assert env.step("f(21)")[0] == "42\n"
    env.step("let x = 1")
    assert env.step("x")[0] == "1\n"
    env.step("const x = 5")  # defined again, as in a browser console
    assert env.step("x + 1")[0] == "6\n"
    obs, _, _, _, info = env.step("console.log('hi', [1, 2]); 'done'")
    assert obs == "hi [ 1, 2 ]\n'done'\n" and info["exit_code"] == 0


def test_an_exception_prints_its_message_with_status_1(env):
    env.reset(options={"task": 0})
    obs, _, _, _, info = env.step("throw new TypeError('boom')")
    assert obs == "Uncaught TypeError: boom\n" and info["exit_code"] == 1
    assert env.step("1 + 1")[0] == "2\n"


def test_a_busy_action_times_out_and_keeps_the_state():
    e = gym.make("intercode/node-v0", limits=intercode.Limits(timeout=2, kill_grace=0.5))
    try:
        e.reset(options={"task": 0})
        e.step("var kept = 7")
        obs, _, _, _, info = e.step("while (true) {}")
        assert info["exit_code"] == 1 and "timed out" in obs
        assert e.step("kept")[0] == "7\n"
    finally:
        e.close()


# -- scoring -------------------------------------------------------------------------------


def test_a_right_function_under_another_name_scores_one(env):
    reward, info = submit(env, RIGHT.replace("sumSquares", "mine"), name="mine")
    assert reward == 1.0 and info["success"]


def test_a_wrong_answer_scores_below_one(env):
    reward, info = submit(env, "function sumSquares(arr) { return arr.length }")
    assert reward == pytest.approx(1 / 3) and not info["success"]  # right only for []


def test_submitting_nothing_or_not_a_name_scores_zero(env):
    assert submit(env, name="")[0] == 0.0
    assert submit(env, RIGHT, name="1+1")[0] == 0.0
    assert submit(env, RIGHT, name="undefinedThing")[0] == 0.0


def test_the_expected_values_never_enter_the_sandbox(env, monkeypatch):
    sent = []
    env.reset(options={"task": 0})
    box = env.unwrapped._sandbox()
    run = box.run

    def spy(action, timeout=None, kind=None):
        sent.append((kind, action))
        return run(action, timeout=timeout, kind=kind)

    monkeypatch.setattr(box, "run", spy)
    env.step(RIGHT)
    assert env.step("submit sumSquares")[1] == 1.0
    probes = [action for kind, action in sent if kind == "probe"]
    assert len(probes) == 1 and "25.25" not in probes[0] and "expected" not in probes[0]


def test_json_equality_is_javascripts():
    assert same(1, 1.0) and same({"a": [1, None]}, {"a": [1.0, None]})
    assert not same(True, 1) and not same(1, True) and not same(0, False)
    assert not same(None, 0) and not same("1", 1) and not same([1], [1, 2])
    assert not same({"a": 1}, {"a": 1, "b": 2}) and not same(math.nan, math.nan)
    assert not same(math.inf, math.inf)


# -- integrity: the agent's code never decides its own score -----------------------------


def test_a_lying_to_json_counts_only_as_the_value_it_gives(env):
    # returning an object whose toJSON gives 5 IS returning 5, which is right for one test
    reward, _ = submit(env, "function sumSquares(a) { return {toJSON() { return 5 }} }")
    assert reward == pytest.approx(1 / 3)


@pytest.mark.parametrize("value", ["undefined", "NaN", "Infinity", "10n", "() => 5",
                                   "(() => { const a = []; a.push(a); return a })()",
                                   "new Map([[1, 2]])", "Symbol('x')", "[ , 1]"])
def test_values_that_are_not_exactly_json_match_nothing(env, value):
    reward, _ = submit(env, f"function sumSquares(a) {{ return {value} }}")
    assert reward == 0.0


def test_patching_json_stringify_cannot_pass_a_wrong_function(env):
    # the interpreter's own JSON (reached through a host object) now claims passes
    reward, _ = submit(env, "console.log.constructor('return JSON')().stringify = "
                            "() => '{\"pass\": true}'",
                       "function sumSquares(a) { return 0 }")
    assert reward == 0.0  # every reply is now a claim, not a value: all fail


@pytest.mark.parametrize("forged", [
    '[{"pass": true}, {"pass": true}, {"pass": true}]',  # claims instead of values
    '[{"v": 5}, {"v": 0}]',  # too few replies
    '[{"v": 5}, {"v": 0}, {"v": 25.25}, {"v": 1}]',  # too many
    '[{"v": 5}, {"v": 0}, {"v": 25.25}',  # not JSON
    '[' * 100_000 + ']' * 100_000,  # nested deeper than Python's parser goes
    '[{"v": ' + '[' * 50_000 + ']' * 50_000 + '}, {"v": 0}, {"v": 1}]',
    '[{"v": NaN}, {"v": Infinity}, {"v": 1e999}]',
    '[{"v": ' + '9' * 100_000 + '}, {"v": 0}, {"v": 1}]',  # an integer Python refuses
    '[{"v": "' + 'x' * 3_000_000 + '"}, {"v": 0}, {"v": 1}]',  # huge
])
def test_a_replaced_probe_handler_cannot_pass_a_wrong_function(env, forged):
    # the agent's code replaces what writes the reply: every field of it is hostile
    patch = ("const fs = require('fs'); const write = fs.writeSync; "
             f"fs.writeSync = (fd, s, ...r) => fd === 1 && String(s).startsWith('[') ? "
             f"write(fd, {json.dumps(forged)} + '\\n') : write(fd, s, ...r)")
    started = time.monotonic()
    reward, info = submit(env, patch, "function sumSquares(a) { return -1 }")
    assert reward == 0.0 and not info["success"]
    assert time.monotonic() - started < 30


def test_the_right_values_forged_are_only_what_a_right_function_returns(env):
    # a forger must know the right values for every call: that is solving the task
    forged = '[{"v": 5}, {"v": 0}, {"v": 25.25}]'
    patch = ("const fs = require('fs'); const write = fs.writeSync; "
             f"fs.writeSync = (fd, s, ...r) => fd === 1 && String(s).startsWith('[') ? "
             f"write(fd, {json.dumps(forged)} + '\\n') : write(fd, s, ...r)")
    reward, _ = submit(env, patch, "function sumSquares(a) { return -1 }")
    assert reward == 1.0  # documented: claiming the right values is answering rightly


def test_a_function_that_never_returns_costs_only_its_test(env):
    started = time.monotonic()
    reward, _ = submit(env, "function sumSquares(a) { if (!a.length) while (true) {} "
                            "return a.reduce((s, x) => s + x * x, 0) }")
    assert reward == pytest.approx(2 / 3)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("value", ["'x'.repeat(50_000_000)", "Array(10_000_000).fill(7)",
                                   "Array.from({length: 2000}, () => 'y'.repeat(10000))"])
def test_a_huge_return_value_is_bounded(env, value):
    started = time.monotonic()
    reward, _ = submit(env, f"function sumSquares(a) {{ return {value} }}")
    assert reward == 0.0 and time.monotonic() - started < 20
    # the episode goes on
    env.reset(options={"task": 0})
    assert env.step("1 + 1")[0] == "2\n"


def test_a_probe_that_kills_the_interpreter_fails_the_tests_only(env):
    reward, info = submit(env, "function sumSquares(a) { process.exit(0) }")
    assert reward == 0.0 and info["tests_total"] == 3
    env.reset(options={"task": 0})
    assert env.step("1 + 1")[0] == "2\n"


@pytest.mark.parametrize("agent", ["single-turn", "try-again", "react", "plan-solve", "tools"])
def test_every_llm_strategy_solves_tasks_with_the_gold_responder(tmp_path, agent):
    # the strategies' parsing and prompts come from the plugin's Benchmark
    from intercode.llm.client import ModelConfig
    from intercode.llm.gold_responder import GoldResponder
    from intercode.llm.scripted_server import ScriptedChatServer
    from intercode.runner.run import RunConfig, execute

    with ScriptedChatServer(GoldResponder(intercode.load_dataset("node-basic"),
                                          detour=0)) as server:
        cfg = RunConfig(env="node", dataset="node-basic", agent=agent, output=tmp_path / "run",
                        workers=1, tasks=(0, 1, 2), max_turns=None if agent == "plan-solve"
                        else 5,
                        model=ModelConfig("scripted", base_url=server.url, retries=1,
                                          backoff=0.0))
        summary = execute(cfg, progress=False)
    assert summary["errors"] == 0 and summary["success"] == 3


def test_it_runs_and_scores_on_the_docker_backend_too():
    """The environment takes its sandbox from the registry: ``--sandbox docker`` puts the
    interpreter in a container (an image of the same root, with Node.js)."""
    from backends import need

    from intercode.sandbox.docker import DockerSandbox

    need("docker")
    e = NodeEnv(backend="docker", test_timeout=0.5)
    try:
        e.reset(options={"task": 0})
        assert isinstance(e._box, DockerSandbox)
        assert e.step("[1, 2].map(x => x * 3)")[0] == "[ 3, 6 ]\n"
        e.step(RIGHT)
        _, reward, terminated, _, _ = e.step("submit sumSquares")
        assert terminated and reward == 1.0
    finally:
        e.close()
