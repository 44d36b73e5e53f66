"""The policy interface the runner drives."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from intercode.datasets import Task

__all__ = ["Action", "Policy"]


@dataclass(frozen=True)
class Action:
    """What a policy wants to do next.

    ``text`` is run in the environment unless ``valid`` is false (a reply with no
    action, recorded but not executed, scoring 0 as upstream; ``note`` is then what the
    agent is told instead of an output). ``submit`` submits (``text`` is the whole
    submit action, e.g. ``submit picoCTF{...}``, or empty for the bare keyword).
    ``meta`` is what producing the action cost (model calls, tokens, the raw reply).
    """

    text: str
    valid: bool = True
    submit: bool = False
    note: str | None = None
    meta: dict[str, Any] | None = None


class Policy(ABC):
    """Chooses actions for one episode at a time.

    ``score_each_turn`` selects Try Again semantics: the state is scored after every
    action, the episode's reward is the best score, and it stops at a reward of 1
    (``stop_at_success``). Otherwise the reward is the submitted one, or the final
    state's when the policy stops or runs out of turns without submitting.
    """

    name = "policy"
    score_each_turn = True
    stop_at_success = True

    @abstractmethod
    def reset(self, task: Task) -> None:
        """Start an episode on ``task``."""

    @abstractmethod
    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """The next action given the last observation (and, under Try Again or after a
        submission, the last reward), or ``None`` to stop."""

    def episode_extra(self) -> dict[str, Any]:
        """What the episode's record should keep beyond its turns (a plan, unused calls)."""
        return {}

    def episode_messages(self) -> dict[str, dict[str, Any]]:
        """The messages the turns' ``llm["prompts"]`` name, by id (none without a model)."""
        return {}
