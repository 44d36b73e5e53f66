"""What every intercode environment shares: the Gymnasium glue.

:class:`IntercodeEnv` is :class:`~intercode.envs.core.base.EnvCore` (task choice, turns,
``submit`` and ``skip``, ``info``, snapshots and forks) as a ``gymnasium.Env``, with its
text spaces. Turn limits are Gymnasium's ``TimeLimit``. Each built-in environment is its
core and this class (``class BashEnv(BashCore, IntercodeEnv)``); a plugin's subclasses
this one.
"""

from __future__ import annotations

import gymnasium as gym

from intercode.datasets import Dataset
from intercode.envs.bounds import MAX_ACTION
from intercode.envs.core.base import EnvCore, Evaluation, not_picklable
from intercode.envs.spaces import AnyText

__all__ = ["Evaluation", "IntercodeEnv", "not_picklable"]


class IntercodeEnv(EnvCore, gym.Env[str, str]):
    """Base of the intercode environments (text actions, text observations)."""

    def __init__(self, dataset: str | Dataset, render_mode: str | None = None) -> None:
        super().__init__(dataset, render_mode=render_mode)
        self.action_space = AnyText(max_length=MAX_ACTION, min_length=1)

    def _limit_observations(self, chars: int) -> None:
        super()._limit_observations(chars)
        self.observation_space = AnyText(max_length=self.max_observation)
