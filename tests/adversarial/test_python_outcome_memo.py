"""Python scoring that reuses the gold's side's answers must give the same rewards as
scoring that asks it every time: only an answer asking exactly the same question, and
passing exactly as the gold does, skips the gold's sandbox."""

from __future__ import annotations

import pytest

from intercode.envs.python import PythonEnv


@pytest.fixture()
def env():
    # the memo alone (outcomes stored on disk by other tests would confirm golds early)
    e = PythonEnv("mbpp-prompt", test_timeout=2.0, gold_cache=False)
    yield e
    e.close()


def scored(env, code, name="min_cost"):
    """Reset to MBPP 1, run ``code``, submit ``name``: the info and the gold sandbox's
    requests made for it."""
    calls = []
    run = env._run

    def counting(which, request, kind, parts):
        calls.append((which, kind))
        return run(which, request, kind, parts)

    env._run = counting
    try:
        env.reset(options={"task": 0})
        env.step(code)
        _, reward, _, _, info = env.step(f"submit {name}")
    finally:
        env._run = run
    return reward, info, [c for c in calls if c[0] == "gold"]


def test_the_same_right_answer_skips_the_gold_sandbox_once_confirmed(env):
    gold = env.dataset[0].gold
    first = scored(env, gold)
    second = scored(env, gold)
    third = scored(env, gold)
    assert first[0] == second[0] == third[0] == 1.0
    assert first[1] == second[1] == third[1]
    assert first[2] and second[2]  # the gold's outcomes are confirmed by two scorings
    assert third[2] == []


def test_wrong_and_partly_right_answers_are_judged_every_time(env):
    gold = env.dataset[0].gold
    for _ in range(3):
        scored(env, gold)
    for _ in range(2):
        reward, info, calls = scored(env, "def f(cost, m, n):\n    return 8", "f")
        assert reward == pytest.approx(1 / 3) and info["tests_correct"] == 1
        assert calls == [("gold", "judge")]
        reward, _, calls = scored(env, "def f(cost, m, n):\n    return 0", "f")
        assert reward == 0.0 and calls == [("gold", "judge")]


def test_a_near_copy_of_a_right_answer_asks_its_own_question(env):
    gold = env.dataset[0].gold
    for _ in range(3):
        scored(env, gold)
    # equal values, but printed output: upstream's outcome differs, so does the reward
    printing = (gold + "\n_orig = min_cost\ndef min_cost(c, m, n):\n"
                "    print('x')\n    return _orig(c, m, n)\n")
    reward, _, calls = scored(env, printing)
    assert reward == 0.0 and calls == [("gold", "judge")]
    # a float equal to the right int: a different value, judged (and still passing)
    as_float = gold + "\n_o = min_cost\ndef min_cost(c, m, n):\n    return float(_o(c, m, n))\n"
    reward, _, calls = scored(env, as_float)
    assert calls == [("gold", "judge")]
    fresh = PythonEnv("mbpp-prompt", test_timeout=2.0)
    try:
        assert reward == scored(fresh, as_float)[0]
    finally:
        fresh.close()
