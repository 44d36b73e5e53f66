"""The gold policy: run the task's gold solution once."""

from __future__ import annotations

from intercode.agents.base import Action, Policy
from intercode.datasets import Task


class GoldPolicy(Policy):
    """Runs the gold solution as the agent's single action."""

    name = "gold"

    def __init__(self) -> None:
        self._pending: str | None = None

    def reset(self, task: Task) -> None:
        """Remember the task's gold (for CTF, the flag is submitted)."""
        from intercode.datasets import CtfTask

        self._pending = f"submit {task.gold}" if isinstance(task, CtfTask) else task.gold

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """The gold, then nothing."""
        action, self._pending = self._pending, None
        return None if action is None else Action(action)
