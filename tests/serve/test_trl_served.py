"""The TRL environment class against a served environment (``url=``): rewards, a server
smaller than the batch, idle expiry, and a server that serves something else.

TRL itself is not needed (the class is what ``GRPOTrainer`` calls); OpenEnv is (the main
test environment has its oldest supported version, scripts/extra-test openenv the newest).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import openenv_process
import pytest

from intercode.benchmarks import get
from intercode.datasets import load_dataset
from intercode.errors import ConfigError
from intercode.integrations.trl import environment_class

TOKEN = "trl-served-token"
TOKEN_VAR = "INTERCODE_TEST_TRL_TOKEN"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with openenv_process.served(
            ["bash", "--dataset", "bash-demo", "--reward", "success", "--max-sessions", "2",
             "--warm", "2", "--idle-timeout", "3", "--token-env", TOKEN_VAR],
            {TOKEN_VAR: TOKEN}) as address:
        yield address


@pytest.fixture(scope="module")
def gold() -> tuple[str, str]:
    task = load_dataset("bash-demo")[2]
    return get("bash").gold_action(task), "echo nothing useful"


def served(url: str, **kwargs: object) -> type:
    return environment_class("bash", "bash-demo", reward="success", url=url, token=TOKEN,
                             **kwargs)


def test_a_served_episode_scores_as_in_process(url, gold):
    right, wrong = gold
    env = served(url)()
    assert env.reset(benchmark="bash", dataset="bash-demo", task=2) is None
    assert env.execute("echo hi").strip() == "hi"
    env.execute(right)
    assert "The episode is over" in env.submit()
    assert env.get_reward() == 1.0 and env.faults == 0
    env.reset(task=2)
    env.execute(wrong)
    assert env.get_reward() == 0.0  # never submitted: the final state, scored
    assert env.faults == 0
    assert env.reset() is not None  # no task column: the server draws one, its wording back


def test_a_server_serving_something_else_is_a_one_line_error(url):
    with pytest.raises(ConfigError, match="with the success reward, not bash on bash-demo "
                                          "with the paper reward"):
        environment_class("bash", "bash-demo", reward="paper", url=url, token=TOKEN)()
    with pytest.raises(ConfigError, match="bearer token"):
        environment_class("bash", "bash-demo", reward="success", url=url, token="wrong")()
    with pytest.raises(ConfigError, match="environment arguments"):
        environment_class("bash", "bash-demo", url=url, sandbox="bwrap")
    with pytest.raises(ConfigError, match="url must be"):
        environment_class("bash", "bash-demo", url="localhost:1")


def test_a_batch_larger_than_the_server_waits_or_scores_a_failure(url, gold):
    """Three rollouts on a two-session server, reset together as TRL resets a batch: the
    third starts when one of the others ends; one that can wait for nothing is told so in
    a tool result, and scores 0 as a failure, without an exception."""
    right, _ = gold
    cls = served(url, wait=20)
    first, second, third = cls(), cls(), cls()
    for env in (first, second, third):
        assert env.reset(task=2) is None  # the third finds the server full: pending
    first.execute(right)
    first.submit()  # its session goes back at once
    third.execute(right)  # waits for it, then runs
    third.submit()
    assert (first.get_reward(), third.get_reward()) == (1.0, 1.0)

    impatient = served(url, wait=0)()
    second.reset(task=2)
    holder = cls()
    holder.reset(task=2)  # both sessions in use now
    impatient.reset(task=2)
    said = impatient.execute("ls")
    assert said.startswith("error:") and "no free session" in said
    assert impatient.get_reward() == 0.0 and impatient.faults == 1
    for env in (second, holder):
        env.submit()


def test_an_expired_session_loses_its_episode_and_the_next_one_starts(url, gold):
    right, _ = gold
    env = served(url)()
    env.reset(task=2)
    time.sleep(8.5)  # --idle-timeout 3; OpenEnv's reaper looks every 5 s
    said = env.execute(right)
    assert said.startswith("error:") and "idle" in said
    assert env.get_reward() == 0.0 and env.faults == 1
    env.reset(task=2)
    env.execute(right)
    env.submit()
    assert env.get_reward() == 1.0
