"""The TRL environment class on its own (TRL not needed): tools, rewards, failures."""

from __future__ import annotations

import inspect

import pytest

from intercode.envs.bounds import MAX_ACTION
from intercode.errors import ConfigError
from intercode.integrations.trl import environment_class, training_rows
from intercode.integrations.trl.environment import OVER


@pytest.fixture(scope="module")
def bash():
    env = environment_class("bash", "bash-demo", reward="success")()
    yield env
    env.environment.close()


@pytest.fixture(scope="module")
def rows():
    return training_rows("bash", "bash-demo")


def tools_as_trl_sees_them(cls):
    """What GRPOTrainer offers as tools: the class's public functions but reset/get_reward."""
    return {name for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
            if not name.startswith("_") and name not in ("reset", "get_reward")}


def test_only_execute_and_submit_are_tools():
    assert tools_as_trl_sees_them(environment_class("bash", "bash-demo")) == {"execute",
                                                                              "submit"}
    assert tools_as_trl_sees_them(environment_class("ctf", "ctf")) == {"execute", "submit"}


def test_rows_hold_the_task_in_the_tools_wording(rows):
    assert [row["task"] for row in rows] == list(range(8))
    system, user = rows[0]["prompt"]
    assert system["role"] == "system" and "execute(code)" in system["content"]
    assert user == {"role": "user", "content": "Task: Count the lines of all Python files "
                                               "under /project/src together."}
    assert {row["benchmark"] for row in rows} == {"bash"}
    assert training_rows("bash", "bash-demo", environment="bash")[0]["environment"] == "bash"


def test_wrong_settings_are_one_line_errors():
    with pytest.raises(ConfigError):
        environment_class("nope", "bash-demo")
    with pytest.raises(ConfigError):
        environment_class("bash", "bash-demo", reward="best")
    with pytest.raises(ConfigError):
        environment_class("bash", "bash-demo", observation_chars=0)


def test_gold_then_submit_scores_one(bash, rows):
    assert bash.reset(**rows[0]) is None
    assert bash.execute("cat /project/src/*.py | wc -l") == "4\n"
    assert bash.submit() == f"4\n\n{OVER}"
    assert bash.get_reward() == 1.0
    assert bash.execute("ls") == OVER and bash.submit() == OVER
    assert bash.get_reward() == 1.0


def test_an_unsubmitted_episode_scores_its_final_state(bash, rows):
    bash.reset(**rows[0])
    bash.execute("cat /project/src/*.py | wc -l")
    assert bash.get_reward() == 1.0
    bash.reset(**rows[0])
    assert bash.get_reward() == 0.0  # reset starts a fresh episode


@pytest.mark.parametrize("code, said", [
    (5, "non-empty string"), ("   ", "non-empty string"), (None, "non-empty string"),
    ("x" * (MAX_ACTION + 1), "characters long"),
])
def test_bad_code_is_a_tool_result(bash, rows, code, said):
    bash.reset(**rows[0])
    assert said in bash.execute(code)
    assert bash.turns == 0 and not bash.over and bash.fault is None


@pytest.mark.parametrize("row, said", [
    ({"task": 99}, "task must be an integer"), ({"task": True}, "integer index"),
    ({"task": "0"}, "integer index"), ({"task": 0, "benchmark": "sql"}, "'sql' task"),
    ({"task": 0, "dataset": "nl2bash"}, "dataset 'nl2bash'"),
])
def test_a_row_that_cannot_run_scores_zero(bash, row, said):
    text = bash.reset(prompt=[], **row)
    assert text is not None and said in text and text.endswith("This episode scores 0.")
    assert bash.execute("echo hi") == OVER
    assert bash.get_reward() == 0.0


def test_without_a_task_a_task_is_drawn(bash):
    text = bash.reset(prompt=[])
    assert text is not None and text.startswith("Task: ") and bash.task is not None


def test_the_turn_limit_ends_the_episode(rows):
    env = environment_class("bash", "bash-demo", max_turns=2)()
    try:
        env.reset(**rows[0])
        assert env.execute("echo one") == "one\n"
        assert env.execute("echo two").endswith(f"The turn limit is reached. {OVER}")
        assert env.execute("echo three") == OVER
    finally:
        env.environment.close()


def test_an_environment_failure_is_a_tool_result_and_scores_zero(rows, monkeypatch):
    env = environment_class("bash", "bash-demo")()
    try:
        env.reset(**rows[0])
        broken = env.environment

        def fail(action):
            raise RuntimeError("the sandbox died\nwith a second line")

        monkeypatch.setattr(broken, "step", fail)
        text = env.execute("cat /project/src/*.py | wc -l")
        assert text == ("error: the environment failed: the sandbox died with a second line. "
                        "This episode scores 0.")
        assert env.get_reward() == 0.0 and env.faults == 1 and env.environment is None
        # the next episode runs on a new environment
        assert env.reset(**rows[0]) is None and env.environment is not broken
        assert env.execute("cat /project/src/*.py | wc -l") == "4\n"
        assert env.submit().endswith(OVER) and env.get_reward() == 1.0
        assert env.faults == 1
    finally:
        if env.environment is not None:
            env.environment.close()


def test_a_failed_reset_scores_zero_and_the_next_one_recovers(rows, monkeypatch):
    env = environment_class("bash", "bash-demo")()
    try:
        def fail(**kwargs):
            raise OSError("no space left")

        monkeypatch.setattr(env.environment, "reset", fail)
        text = env.reset(**rows[1])
        assert text == "error: the task could not be started: no space left. This episode scores 0."
        assert env.get_reward() == 0.0 and env.execute("ls") == OVER
        assert env.reset(**rows[0]) is None and env.environment is not None
        assert env.execute("cat /project/src/*.py | wc -l") == "4\n"
    finally:
        if env.environment is not None:
            env.environment.close()
