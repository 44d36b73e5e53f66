"""The policy interface the runner drives."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from intercode.datasets import Task


@dataclass(frozen=True)
class Action:
    """What a policy wants to do next.

    ``text`` is run in the environment unless ``valid`` is false (a reply with no
    action, recorded but not executed, scoring 0 as upstream). ``submit`` ends the
    episode.
    """

    text: str
    valid: bool = True
    submit: bool = False


class Policy(ABC):
    """Chooses actions for one episode at a time.

    ``score_each_turn`` selects Try Again semantics: the state is scored after every
    action, the episode's reward is the best score, and it stops at a reward of 1.
    """

    name = "policy"
    score_each_turn = True
    stop_at_success = True

    @abstractmethod
    def reset(self, task: Task) -> None:
        """Start an episode on ``task``."""

    @abstractmethod
    def act(self, observation: str) -> Action | None:
        """The next action given the last observation, or ``None`` to stop."""
