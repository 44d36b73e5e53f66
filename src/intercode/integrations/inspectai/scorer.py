"""The scorer: intercode's reward of the episode (its value), success and reward parts."""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from intercode.integrations.inspectai.running import STORE_KEY

__all__ = ["intercode_scorer"]


@metric
def success() -> Metric:
    """The share of episodes intercode counts as solved."""

    def compute(scores: list[SampleScore]) -> float:
        if not scores:
            return 0.0
        solved = sum(bool((s.score.metadata or {}).get("success")) for s in scores)
        return solved / len(scores)

    return compute


@scorer(metrics=[mean(), stderr(), success()])
def intercode_scorer() -> Scorer:
    """The episode's reward as intercode computed it when the episode ended: the best
    score under Try Again, else the submitted one or the final state's."""

    async def score(state: TaskState, target: Target) -> Score:
        outcome: dict[str, Any] | None = state.store.get(STORE_KEY)
        if outcome is None:
            return Score(value=0.0, explanation="the episode did not finish",
                         metadata={"success": False})
        verdict = "solved" if outcome["success"] else "not solved"
        answer = outcome.get("action") or state.output.completion
        return Score(value=float(outcome["reward"]), answer=answer,
                     explanation=f"intercode reward {outcome['reward']:g} ({verdict}, "
                                 f"{outcome['turns']} turns)",
                     metadata=outcome)

    return score
