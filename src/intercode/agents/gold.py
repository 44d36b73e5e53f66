"""The gold policy: run the task's gold solution once."""

from __future__ import annotations

from intercode.agents.base import Action, Policy
from intercode.datasets import Task

__all__ = ["GoldPolicy", "NoopPolicy"]


def task_env(task: Task) -> str:
    """The environment of a task's dataset."""
    from intercode.datasets.registry import dataset_env

    env = dataset_env(task.dataset)
    if env is None:
        raise ValueError(f"the dataset {task.dataset!r} of the task is not registered; "
                         "give GoldPolicy its environment")
    return env


class GoldPolicy(Policy):
    """Runs the gold solution as the agent's single action."""

    name = "gold"

    def __init__(self, env: str | None = None) -> None:
        self.env = env
        self._pending: str | None = None

    def reset(self, task: Task) -> None:
        """Remember the action that hands in the task's gold (its benchmark says which:
        the code itself; for CTF, ``submit <flag>``)."""
        from intercode.benchmarks import get

        self._pending = get(self.env or task_env(task)).gold_action(task)

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """The gold, then nothing."""
        action, self._pending = self._pending, None
        return None if action is None else Action(action)


class NoopPolicy(Policy):
    """Hands in the task's starting state at once (``submit``): what doing nothing
    scores. A benchmark whose untouched state scores 1.0 on a task has a broken task."""

    name = "noop"

    def __init__(self, env: str | None = None) -> None:
        self.env = env
        self._done = False

    def reset(self, task: Task) -> None:
        """A new episode: submit once."""
        self._done = False

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """``submit``, then nothing."""
        if self._done:
            return None
        self._done = True
        return Action("submit")
