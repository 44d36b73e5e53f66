"""The Python environment end to end."""

from __future__ import annotations

import pytest

from intercode.envs.core.python import defined_functions
from intercode.envs.python import PythonEnv
from intercode.rewards.python import passed, python_reward


@pytest.fixture(scope="module")
def env():
    e = PythonEnv("mbpp-prompt", test_timeout=1.0)
    yield e
    e.close()


def first_task(env):
    query, _info = env.reset(options={"task": 0})  # MBPP 1: min_cost
    assert env.task.task_id == 1 and env.task.entry_point == "min_cost"
    return query


def test_the_gold_scores_one(env):
    first_task(env)
    env.step(env.task.gold)
    _, reward, terminated, _, info = env.step("submit min_cost")
    assert reward == 1.0 and info["success"] and info["all_pass"] and terminated
    assert info["tests_correct"] == info["tests_total"] == 3


def test_a_renamed_function_is_bound_to_the_gold_name(env):
    first_task(env)
    env.step(env.task.gold.replace("def min_cost(", "def my_solution("))
    ev = env.evaluate()
    assert ev.info["submitted_function"] == "my_solution" and ev.reward == 1.0


def test_a_partly_right_function(env):
    first_task(env)
    # right only for the first test (expects 8)
    env.step("def f(cost, m, n):\n    return 8")
    ev = env.evaluate()
    assert ev.info["tests_correct"] == 1 and ev.reward == pytest.approx(1 / 3)
    assert not ev.info["all_pass"]


def test_printing_changes_the_outcome_as_upstream(env):
    first_task(env)
    env.step(env.task.gold + "\n_orig = min_cost\ndef min_cost(c, m, n):\n"
             "    print('debug')\n    return _orig(c, m, n)\n")
    assert env.evaluate().reward == 0.0  # outputs differ from the gold's, so no test matches


def test_scoring_leaves_the_interpreter_untouched(env):
    first_task(env)
    env.step("state = []\ndef f(cost, m, n):\n    state.append(1)\n    return 8")
    env.evaluate()
    obs, *_ = env.step("state, 'min_cost' in dir()")
    assert obs == "([], False)\n"


def test_a_hanging_function_times_out_per_test(env):
    first_task(env)
    env.step("def f(cost, m, n):\n    while True:\n        pass")
    ev = env.evaluate()
    assert ev.reward == 0.0 and ev.info["tests_total"] == 3


def test_no_function_scores_zero_and_submit_without_name(env):
    first_task(env)
    env.step("x = 1")
    assert env.evaluate().reward == 0.0
    env.step(env.task.gold)
    _, reward, *_ = env.step("submit")
    assert reward == 1.0


def test_upstream_quirks_leak_the_gold_after_scoring():
    e = PythonEnv("mbpp-prompt", upstream_quirks=True)
    try:
        e.reset(options={"task": 0})
        e.step("def wrong(cost, m, n):\n    return 0")
        assert e.evaluate().reward == 0.0
        obs, *_ = e.step("min_cost([[1, 2, 3], [4, 8, 2], [1, 5, 3]], 2, 2)")
        assert obs == "8\n"  # upstream ran the gold in the agent's interpreter
        assert e.evaluate().reward == 0.0  # and scored only actions starting with def
    finally:
        e.close()


def test_helpers():
    assert defined_functions("import x\ndef a():\n  pass\nasync def b():\n  pass\nclass C:\n"
                             "  def m(self):\n    pass") == ["a", "b"]
    assert defined_functions("def broken(:") == []
    ok, bad = {"output": "", "error": ""}, {"error": "Error: "}
    assert passed(ok) and not passed(bad)
    result = python_reward([ok, bad, bad], [ok, ok, bad])
    assert result.correct == 2 and result.reward == pytest.approx(2 / 3) and not result.all_pass
    with pytest.raises(ValueError):
        python_reward([ok], [])
