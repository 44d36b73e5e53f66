"""The judge runs a request in the gold's interpreter itself, without a fork, only when
nothing of it can outlast the request: no gold to run, templates that only compute
(``python_split.pure_template``) and values that decode to plain data. An answer's values
or a dataset's test that could change the gold's interpreter (whose forks run every later
gold) are judged in a fork, as before."""

from __future__ import annotations

import pytest

from intercode.datasets.mbpp import PythonTask
from intercode.datasets.tasks import Dataset
from intercode.envs.python import PythonEnv

STATE = "import random, sys\nprint(hash(random.getstate()), sorted(sys.modules))"


def _dataset(tests: tuple[str, ...]) -> Dataset:
    gold = "def pick(x):\n    return [x]\n"
    task = PythonTask(index=0, query="pick", gold=gold, dataset="judge-here", source="test",
                      source_index=0, tests=tests, entry_point="pick")
    return Dataset("judge-here", "python", (task,), "test")


def _judged_twice(tests: tuple[str, ...], answer: str) -> tuple[str, str, list[float]]:
    """The gold interpreter's random state before and after an answer is judged (its
    gold already known, so that the request is the judge's alone), and the rewards."""
    env = PythonEnv(_dataset(tests), test_timeout=2.0)
    try:
        rewards = []
        for action in ("def pick(x):\n    return [x]\n", "def pick(x):\n    return [x]\n"):
            env.reset(options={"task": 0})
            env.step(action)
            rewards.append(env.step("submit pick")[1])
        gold_box = env._boxes["gold"]
        before = gold_box.run(STATE).output
        env.reset(options={"task": 0})
        env.step(answer)
        rewards.append(env.step("submit pick")[1])
        after = gold_box.run(STATE).output
    finally:
        env.close()
    return before, after, rewards


def test_a_module_as_an_answer_is_judged_in_a_fork():
    """``pick`` returns the ``random`` module; the test calls ``seed`` on the value: in
    the gold's interpreter itself that would reseed what every later gold draws."""
    before, after, rewards = _judged_twice(
        ("assert pick(1).seed(1) is None or pick(1) == [1]",),
        "import random\ndef pick(x):\n    return random\n")
    assert rewards[:2] == [1.0, 1.0]
    assert before == after


@pytest.mark.parametrize("test", [
    "assert pick(1) == [1] or __import__('random').seed(5)",
    # a generator's frame reaches the builtins through attributes without a leading _
    "assert pick(1) == [1] or (x for x in ()).gi_frame.f_builtins['exec']("
    "'import random; random.seed(5)')",
    # a name bound by a comprehension (or a lambda) is the builtin outside it
    "assert pick(1) == [1] or [0 for __import__ in ()] or __import__('random').seed(5)",
    # a codec looked up by str(bytes, name) imports its module (and more)
    "assert str(b'x', 'hz') == 'x' and pick(1) == [1]",
])
def test_a_test_that_changes_the_interpreter_is_judged_in_a_fork(test):
    """A dataset's test that reseeds ``random`` or imports a module is not pure, however
    it reaches it."""
    before, after, rewards = _judged_twice((test,), "def pick(x):\n    return [0]\n")
    assert rewards == [1.0, 1.0, 0.0]
    assert before == after


def test_an_answers_exception_leaves_no_class_behind():
    """The judge made a class named after what the agent's function raised: in place it
    stayed in the gold's interpreter, where later golds could list it."""
    env = PythonEnv(_dataset(("assert sorted(pick(1)) == [1]",)), test_timeout=2.0)
    try:
        for action in ("def pick(x):\n    return [x]\n",) * 2 + (
                "class Secret_answer_is_42(Exception):\n    pass\n"
                "def pick(x):\n    raise Secret_answer_is_42('no')\n",):
            env.reset(options={"task": 0})
            env.step(action)
            reward = env.step("submit pick")[1]
        listed = env._boxes["gold"].run(
            "print([c.__name__ for c in Exception.__subclasses__() if 'Secret' in c.__name__])")
    finally:
        env.close()
    assert reward == 0.0 and listed.output == "[]\n"


@pytest.mark.parametrize("answer", ["def pick(x):\n    return [0]\n",
                                    "def pick(x):\n    raise ValueError('no')\n",
                                    "def pick(x):\n    print('noise')\n    return {x: {x}}\n"])
def test_a_plain_answer_judged_in_place_leaves_the_interpreter_as_it_was(answer):
    before, after, rewards = _judged_twice(
        ("assert sorted(pick(1)) == [1]", "assert pick(2).count(2) == 1"), answer)
    assert rewards[2] == 0.0 and before == after
