"""One intercode episode driven from outside (an Inspect solver or its tools).

The reward follows the runner's rules (:class:`intercode.envs.driver.EpisodeDriver`):
under Try Again every action is scored and the episode's reward is the best score (it
stops at success); otherwise it is the submitted reward, or the final state's score when
the episode ends without a submission. Environments are blocking: callers in an event
loop run these methods in a worker thread. Nothing here imports inspect_ai.
"""

from __future__ import annotations

import atexit
from dataclasses import dataclass, field
from typing import Any

from intercode.envs.base import IntercodeEnv
from intercode.envs.driver import RETRY_MESSAGE, EpisodeDriver, EpisodeResult
from intercode.envs.info import plain
from intercode.envs.pool import WarmPool
from intercode.errors import AgentFault

__all__ = ["POOL", "Episode"]


@dataclass
class Step:
    """What one action gave: its output, its score (Try Again) and whether it ended."""

    observation: str
    reward: float | None
    done: bool
    exit_code: int | None = None
    submitted: bool = False


@dataclass
class Outcome:
    """The episode's result, JSON-ready (an Inspect store value)."""

    reward: float
    success: bool
    parts: dict[str, Any] = field(default_factory=dict)
    best_turn: int | None = None  # counted from 0 (as the records count)
    turns: int = 0
    submitted: bool = False
    agent_fault: str | None = None
    action: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A plain dict; its ``best_turn`` counts from 1, as ``intercode show`` says it."""
        best = None if self.best_turn is None else self.best_turn + 1
        return {"reward": self.reward, "success": self.success, "parts": self.parts,
                "best_turn": best, "turns": self.turns,
                "submitted": self.submitted, "agent_fault": self.agent_fault,
                "action": self.action}


class Episode:
    """An episode of task ``index`` on ``env`` (reset on creation)."""

    def __init__(self, env: IntercodeEnv, index: int, score_each_turn: bool = True,
                 stop_at_success: bool = True) -> None:
        self.env = env
        self.index = index
        self.score_each_turn = score_each_turn
        self.stop_at_success = stop_at_success
        self._driver = EpisodeDriver(env, index, score_each_turn, stop_at_success)
        self.query = self._driver.query
        self.outcome: Outcome | None = None
        self._by_turn: dict[int, str] = {}  # turn index -> the action run

    @property
    def turns(self) -> int:
        """Turns so far (replies without an action included)."""
        return self._driver.turns

    @property
    def done(self) -> bool:
        """Whether the episode has ended."""
        return self._driver.done

    def act(self, action: str) -> Step:
        """Run one action (code, ``submit [answer]`` or ``skip``)."""
        if self.done:
            return Step("The episode has ended.", None, True)
        self._by_turn[self.turns] = action
        try:
            step = self._driver.act(action)
        except AgentFault as exc:  # what the agent did to its own sandbox: scored 0
            self._fault(exc)
            return Step(f"the episode ended: {exc}", 0.0, True)
        return Step(step.observation, None if step.reward is None else float(step.reward),
                    step.done, exit_code=step.exit_code, submitted=step.submitted)

    def invalid(self) -> Step:
        """A reply without an action: a turn, not executed, scored 0 (as upstream)."""
        self._driver.invalid()
        return Step(RETRY_MESSAGE, 0.0 if self.score_each_turn else None, False)

    def submit(self, answer: str | None = None) -> Step:
        """Submit (with the answer where the environment takes one: a flag, a function)."""
        keyword = self.env.submit_keyword
        return self.act(f"{keyword} {answer.strip()}" if answer and answer.strip() else keyword)

    def finish(self) -> Outcome:
        """The episode's outcome (scoring the final state if nothing decided it yet), with
        the action that earned it (the best turn's under Try Again, else the last)."""
        outcome = self._finish()
        last = self._by_turn[max(self._by_turn)] if self._by_turn else None
        turn = outcome.best_turn
        outcome.action = self._by_turn.get(turn, last) if turn is not None else last
        return outcome

    def _finish(self) -> Outcome:
        if self.outcome is not None:
            return self.outcome
        try:
            result = self._driver.finish()
        except AgentFault as exc:
            return self._fault(exc)
        self.outcome = _outcome(result, self.turns)
        return self.outcome

    def _fault(self, exc: AgentFault) -> Outcome:
        self._driver.end(EpisodeResult(0.0, False))
        self.outcome = Outcome(0.0, False, turns=self.turns, agent_fault=str(exc))
        return self.outcome


def _outcome(result: EpisodeResult, turns: int) -> Outcome:
    if result.submitted:
        parts = {k: v for k, v in result.info.items()
                 if k not in ("turn", "submitted", "success")}
        return Outcome(float(result.reward), bool(result.success), plain(parts),
                       result.best_turn, turns, True)
    return Outcome(float(result.reward), bool(result.success), plain(result.info),
                   result.best_turn, turns)


POOL = WarmPool()
atexit.register(POOL.close)
