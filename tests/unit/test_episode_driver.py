"""The episode driver's reward rules, on a scripted environment (no sandbox)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.envs.driver import EpisodeDriver
from intercode.errors import AgentFault, SandboxError


class Scripted:
    """Each action's score is the number it prints; ``submit`` scores the last one;
    ``submit wrong`` is a wrong flag (the episode goes on)."""

    submit_keyword = "submit"
    skip_keyword = "skip"

    def __init__(self, fail_reset: bool = False) -> None:
        self.fail_reset = fail_reset
        self.score = 0.0
        self.evaluations = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if self.fail_reset:
            raise AgentFault("the last agent broke it")
        self.score = 0.0
        return "the query", {}

    def parse_submit(self, action: str) -> tuple[bool, str | None]:
        parts = action.split()
        return bool(parts) and parts[0] == "submit", parts[1] if len(parts) > 1 else None

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if action.startswith("submit"):
            if action == "submit wrong":
                return "wrong flag", 0.0, False, False, {"submitted": True}
            return "", self.score, True, False, {"turn": 1, "submitted": True,
                                                 "success": self.score >= 1}
        self.score = float(action)
        return action, 0.0, False, False, {"exit_code": 0}

    def evaluate(self) -> Evaluation:
        self.evaluations += 1
        return Evaluation(self.score, self.score >= 1, {"score": self.score})


def driver(score_each_turn: bool = True, stop_at_success: bool = True,
           env: Scripted | None = None) -> EpisodeDriver:
    return EpisodeDriver(cast(IntercodeEnv, env or Scripted()), 0, score_each_turn,
                         stop_at_success)


def test_try_again_keeps_the_best_score_over_a_worse_submission() -> None:
    d = driver()
    assert d.act("0.5").reward == 0.5 and d.act("0.2").reward == 0.2
    step = d.act("submit")
    assert step.done and step.reward == 0.2
    result = d.finish()
    assert (result.reward, result.best_turn, result.submitted) == (0.5, 0, False)


def test_a_better_submission_is_the_result_with_its_info() -> None:
    d = driver()
    d.act("0.2")
    d.act("0.3")
    d.act("submit")
    result = d.finish()
    assert (result.reward, result.best_turn, result.submitted) == (0.3, 2, True)
    assert result.info["submitted"] is True


def test_try_again_stops_at_success_unless_told_not_to() -> None:
    assert driver().act("1").done
    d = driver(stop_at_success=False)
    assert not d.act("1").done
    assert d.execute("1", stop_at_success=True).done


def test_without_try_again_the_final_state_is_scored_once() -> None:
    env = Scripted()
    d = driver(score_each_turn=False, env=env)
    assert d.act("0.4").reward is None and d.act("0.7").reward is None
    assert env.evaluations == 0
    result = d.finish()
    assert (result.reward, result.best_turn, env.evaluations) == (0.7, None, 1)


def test_a_wrong_flag_goes_on_and_skip_scores_the_final_state() -> None:
    d = driver(score_each_turn=False)
    d.act("0.6")
    step = d.act("submit wrong")
    assert step.submitted and not step.done
    assert d.act("skip").done
    assert d.act("0.9").observation == "The episode has ended."
    assert d.finish().reward == 0.6


def test_only_replies_without_an_action_score_zero() -> None:
    env = Scripted()
    d = driver(env=env)
    d.invalid()
    d.invalid()
    result = d.finish()
    assert (result.reward, result.success, env.evaluations) == (0.0, False, 0)


def test_a_reset_broken_by_the_last_agent_is_not_this_episodes_fault() -> None:
    with pytest.raises(SandboxError, match="reset failed"):
        driver(env=Scripted(fail_reset=True))
