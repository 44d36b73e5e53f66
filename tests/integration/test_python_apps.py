"""APPS problems on the Python environment end to end (problems the tests make)."""

from __future__ import annotations

import pytest
from apps_helpers import CALL_GOLD, STDIN_GOLD, dataset

from intercode.benchmarks.python import gold_code, submit_function
from intercode.envs.python import PythonEnv
from intercode.validate import validate_dataset


@pytest.fixture(scope="module")
def env():
    e = PythonEnv(dataset(), test_timeout=2.0)
    yield e
    e.close()


def write(source: str, path: str = "solution.py") -> str:
    return f"with open({path!r}, 'w') as f:\n    _ = f.write({source!r})\n"


def submit(env, *actions, task=0, argument=""):
    env.reset(options={"task": task})
    for action in actions:
        env.step(action)
    _, reward, terminated, _, info = env.step(f"submit {argument}".strip())
    assert terminated
    return reward, info


@pytest.mark.parametrize("task", range(4))
def test_each_gold_scores_one(env, task):
    reward, info = submit(env, gold_code(env.dataset[task]), task=task,
                          argument=submit_function(env.dataset[task]).removeprefix("submit"))
    assert reward == 1.0 and info["all_pass"] and info["tests_correct"] == info["tests_total"]


def test_validate_scores_every_test_made_gold():
    report = validate_dataset(dataset(), test_timeout=2.0)
    assert report["scored_one"] == 4 and not report["unexpected"] and not report["errors"], report


def test_a_partly_right_program_scores_the_test_case_average(env):
    wrong_on_negatives = "a, b = map(int, input().split())\nprint(abs(a) + abs(b))\n"
    reward, info = submit(env, write(wrong_on_negatives))
    assert (reward, info["tests_correct"], info["tests_total"]) == (0.75, 3, 4)
    assert not info["success"] and not info["all_pass"]


def test_call_based_programs(env):
    reward, _ = submit(env, write("def add(a, b):\n    return a - b\n"), task=1)
    assert reward == 0.0
    reward, _ = submit(env, write("class Solution:\n    def add(self, a, b):\n"
                                  "        return a + b\n"), task=1)
    assert reward == 1.0  # APPS's class form
    reward, _ = submit(env, write("def add(a, b):\n    print('noise')\n    return a + b\n"),
                       task=1)
    assert reward == 1.0  # printing does not matter for a call


def test_the_program_file_follows_the_working_directory_and_an_argument(env):
    reward, info = submit(env, "import os\nos.makedirs('/tmp/work', exist_ok=True)\n"
                               "os.chdir('/tmp/work')", write(STDIN_GOLD))
    assert reward == 1.0 and info["submitted_program"] == "/tmp/work/solution.py"
    reward, info = submit(env, write(STDIN_GOLD, "/tmp/mine.py"), argument="/tmp/mine.py")
    assert reward == 1.0 and info["submitted_program"] == "/tmp/mine.py"


def test_try_again_scores_the_default_file(env):
    env.reset(options={"task": 1})
    env.step(write(CALL_GOLD))
    assert env.evaluate().reward == 1.0


@pytest.mark.parametrize(("actions", "why"), [
    ((), "could not be read"),
    (("import os\nos.mkdir('solution.py')",), "could not be read"),
    ((write("   \n"),), "is empty"),
    ((write("x" * (2 << 20)),), "larger than"),
    (("import os\nos.mkfifo('solution.py')",), "could not be read"),
])
def test_a_missing_or_unreadable_program_scores_zero_with_a_note(env, actions, why):
    reward, info = submit(env, *actions)
    assert reward == 0.0 and why in info["note"] and info["tests_correct"] == 0


def test_the_summary_groups_by_difficulty(env):
    assert [t.category for t in env.dataset] == ["introductory", "interview", "competition",
                                                 "interview"]
