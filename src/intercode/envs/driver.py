"""One episode driven action by action, with the episode's reward rules.

The rules (the runner's, Inspect's): under Try Again (``score_each_turn``) every action
is scored and the episode's reward is the best score, and the episode stops at success
(``stop_at_success``); otherwise it is the submitted reward, or the final state's score
when the episode ends without a submission. A wrong CTF flag does not end the episode;
``skip`` ends it without a step (the final state is scored, as for any end without a
submission); an episode of replies without an action only scores 0.

What an agent breaks in its own sandbox (:class:`~intercode.errors.AgentFault`) is left
to the caller (its outcome, scored 0), except at the start: a reset that fails is not
this episode's agent's doing, so it is a :class:`~intercode.errors.SandboxError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from intercode.envs.core.base import EnvCore, Evaluation
from intercode.envs.info import ActionInfo
from intercode.errors import AgentFault, SandboxError

__all__ = ["RETRY_MESSAGE", "EpisodeDriver", "EpisodeResult"]

RETRY_MESSAGE = "No action was found in the reply. Please try again."
ENDED_MESSAGE = "The episode has ended."


@dataclass(frozen=True)
class StepReport:
    """What one action gave: its output, its score (Try Again; a submission: its reward;
    ``None`` when not scored), whether the episode ended, and what the action reported."""

    observation: str
    reward: float | None
    done: bool
    exit_code: int | None = None
    timed_out: bool = False
    submitted: bool = False


@dataclass(frozen=True)
class EpisodeResult:
    """The episode's reward, success and reward parts (the environment's ``info``), the
    turn that earned it (``None``: the final state's) and whether a submission decided
    it (``info`` is then the submission step's)."""

    reward: float
    success: bool
    info: dict[str, Any] = field(default_factory=dict)
    best_turn: int | None = None
    submitted: bool = False


class EpisodeDriver:
    """An episode of task ``index`` on ``env`` (reset on creation), action by action.

    ``turns`` counts every turn (replies without an action included), ``done`` says
    whether the episode ended; :meth:`finish` gives the :class:`EpisodeResult`.
    """

    def __init__(self, env: EnvCore, index: int, score_each_turn: bool = True,
                 stop_at_success: bool = True) -> None:
        self.env = env
        self.score_each_turn = score_each_turn
        self.stop_at_success = stop_at_success
        try:
            self.query, _ = env.reset(options={"task": index})
        except AgentFault as exc:  # the last episode's agent broke it: not this one's fault
            raise SandboxError(f"reset failed: {exc}") from exc
        self.turns = 0
        self.valid_turns = 0
        self.done = False
        self.best: Evaluation | None = None
        self.best_turn: int | None = None
        self.result: EpisodeResult | None = None

    def act(self, action: str) -> StepReport:
        """Run one action: ``skip``, a submission (``submit [answer]``, as the
        environment parses it) or code."""
        if self.done:
            return StepReport(ENDED_MESSAGE, None, True)
        text = action.strip()
        if text == self.env.skip_keyword:
            return self.skip()
        if self.env.parse_submit(text)[0]:
            return self.submit(text)
        return self.execute(action)

    def invalid(self) -> None:
        """A reply without an action: a turn, not executed, scored 0 (as upstream)."""
        self.turns += 1

    def skip(self) -> StepReport:
        """Give up: the episode ends (its final state is scored by :meth:`finish`)."""
        self._turn()
        self.done = True
        return StepReport("", 0.0, True)

    def submit(self, action: str) -> StepReport:
        """Step the submission ``action``; it ends the episode unless the environment goes
        on (a wrong CTF flag)."""
        self._turn()
        observation, reward, terminated, _, info = self.env.step(action)
        if not terminated:
            return StepReport(observation, float(reward), False, submitted=True)
        self.done = True
        if self.score_each_turn and self.best is not None and self.best.reward > float(reward):
            self.result = self._of(self.best, self.best_turn)
        else:
            self.result = EpisodeResult(float(reward), bool(info.get("success")), info,
                                        self.turns - 1, submitted=True)
        return StepReport(observation, float(reward), True, submitted=True)

    def execute(self, action: str, stop_at_success: bool | None = None) -> StepReport:
        """Run ``action`` as code (scored under Try Again); ``stop_at_success``, if given,
        in place of the episode's (a policy's may change during the episode)."""
        self._turn()
        observation, _, terminated, truncated, info = self.env.step(action)
        score = self.env.evaluate() if self.score_each_turn else None
        if score is not None and (self.best is None or score.reward > self.best.reward):
            self.best, self.best_turn = score, self.turns - 1
        if score is not None and score.success and (
                self.stop_at_success if stop_at_success is None else stop_at_success):
            self.done = True
        if terminated or truncated:
            self.done = True
        ran = ActionInfo.read(info)
        return StepReport(observation, None if score is None else score.reward, self.done,
                          exit_code=ran.exit_code, timed_out=ran.timed_out)

    def finish(self) -> EpisodeResult:
        """The episode's result: the one a submission decided, else the best score (Try
        Again), else the final state's (0 if every turn was a reply without an action).
        The episode ends."""
        if self.result is not None:
            return self.result
        self.done = True
        if self.best is None:
            if self.turns and not self.valid_turns:
                self.result = EpisodeResult(0.0, False)
                return self.result
            self.best = self.env.evaluate()
        self.result = self._of(self.best, self.best_turn)
        return self.result

    def end(self, result: EpisodeResult) -> None:
        """End the episode with ``result`` (e.g. an agent's fault, scored 0)."""
        self.done = True
        self.result = result

    def _turn(self) -> None:
        self.turns += 1
        self.valid_turns += 1

    @staticmethod
    def _of(result: Evaluation, turn: int | None) -> EpisodeResult:
        return EpisodeResult(result.reward, result.success, result.info, turn)
