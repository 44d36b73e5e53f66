"""The ``baseline`` reward's do-nothing floor is the task's own: nothing an agent does in
an earlier episode of the same environment may move it."""

from __future__ import annotations

import intercode
from intercode.benchmarks import get
from intercode.datasets import load_dataset


def floor(env: object, task: int) -> float:
    env.reset(options={"task": task})  # type: ignore[attr-defined]
    return float(env.unwrapped._baseline())  # type: ignore[attr-defined]


def test_an_earlier_episodes_last_output_does_not_set_a_later_tasks_floor() -> None:
    """The floor is measured at a task's first reset. An agent that ends an episode on
    task 1 by printing task 0's gold output must not raise task 0's floor (which lowers
    every later reward on it) nor lower it (which raises them)."""
    fresh = intercode.make("bash", dataset="bash-demo", reward="baseline")
    try:
        honest = floor(fresh, 0)
    finally:
        fresh.close()
    gold = get("bash").gold_action(load_dataset("bash-demo")[0])
    env = intercode.make("bash", dataset="bash-demo", reward="baseline")
    try:
        env.reset(options={"task": 1})
        env.step(gold)  # task 0's answer is now the last output of the episode
        assert floor(env, 0) == honest
    finally:
        env.close()
