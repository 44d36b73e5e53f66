"""A recorded episode: the actions a replay runs again, in order."""

from __future__ import annotations

from dataclasses import dataclass

from intercode.agents.base import Action

__all__ = ["Recorded"]


@dataclass(frozen=True)
class Recorded:
    """One recorded episode."""

    task: int
    actions: tuple[Action, ...]
    max_reward: float | None = None
    rewards: tuple[float, ...] = ()
