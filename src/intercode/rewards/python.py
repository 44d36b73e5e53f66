"""InterCode's MBPP reward, as a pure function of two lists of test outcomes.

Upstream (``get_reward_mbpp`` in ``intercode/envs/python/python_env.py``) binds the
submitted function to the name of the gold's first function, runs the task's
``test_setup_code`` and each test statement in the agent's interpreter, runs setup,
gold and tests again in a fresh interpreter, and counts the tests whose outcome is the
same on both sides. An outcome is what its interpreter server returned:
``{"output": <stdout>, "error": <stderr>}`` (both stripped) or ``{"error": "Error: <e>"}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome", "PythonReward", "passed", "python_reward"]

Outcome = dict[str, Any]


@dataclass(frozen=True)
class PythonReward:
    """The share of tests that behave as the gold's, and the strict pass/fail."""

    reward: float
    correct: int
    total: int
    all_pass: bool

    @property
    def success(self) -> bool:
        """A reward of 1: every test behaves as with the gold."""
        return self.reward == 1.0


def passed(outcome: Outcome) -> bool:
    """Whether a test statement ran without raising (an assert held)."""
    return "output" in outcome and not str(outcome.get("error", "")).startswith("Error:")


def python_reward(pred: Sequence[Outcome], gold: Sequence[Outcome]) -> PythonReward:
    """Compare outcome lists of equal length (one entry per test)."""
    if len(pred) != len(gold) or not gold:
        raise ValueError("outcome lists must be non-empty and of equal length")
    correct = sum(1 for p, g in zip(pred, gold, strict=True) if p == g)
    return PythonReward(reward=float(correct) / len(gold), correct=correct, total=len(gold),
                        all_pass=all(passed(p) for p in pred))
