"""One intercode episode driven from outside (an Inspect solver or its tools).

The reward follows the runner's rules exactly (:func:`intercode.runner.episode._play`):
under Try Again every action is scored and the episode's reward is the best score (it
stops at success); otherwise it is the submitted reward, or the final state's score when
the episode ends without a submission. Environments are blocking: callers in an event
loop run these methods in a worker thread. Nothing here imports inspect_ai.
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass, field
from typing import Any

from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.envs.factory import make_env
from intercode.envs.info import ActionInfo
from intercode.envs.settings import EnvSettings
from intercode.errors import AgentFault, SandboxError
from intercode.integrations.serve.sessions import _plain

RETRY_MESSAGE = "No action was found in the reply. Please try again."


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
    best_turn: int | None = None
    turns: int = 0
    submitted: bool = False
    agent_fault: str | None = None
    action: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A plain dict."""
        return {"reward": self.reward, "success": self.success, "parts": self.parts,
                "best_turn": self.best_turn, "turns": self.turns,
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
        try:
            self.query, _ = env.reset(options={"task": index})
        except AgentFault as exc:  # the last episode's agent broke it: not this one's fault
            raise SandboxError(f"reset failed: {exc}") from exc
        self.turns = 0
        self.valid_turns = 0
        self.done = False
        self.best: Evaluation | None = None
        self.best_turn: int | None = None
        self.outcome: Outcome | None = None
        self._by_turn: dict[int, str] = {}  # turn index -> the action run

    def act(self, action: str) -> Step:
        """Run one action (code, ``submit [answer]`` or ``skip``)."""
        if self.done:
            return Step("The episode has ended.", None, True)
        try:
            return self._act(action)
        except AgentFault as exc:  # what the agent did to its own sandbox: scored 0
            self.done = True
            self.outcome = Outcome(0.0, False, turns=self.turns, agent_fault=str(exc))
            return Step(f"the episode ended: {exc}", 0.0, True)

    def invalid(self) -> Step:
        """A reply without an action: a turn, not executed, scored 0 (as upstream)."""
        self.turns += 1
        return Step(RETRY_MESSAGE, 0.0 if self.score_each_turn else None, False)

    def submit(self, answer: str | None = None) -> Step:
        """Submit (with the answer where the environment takes one: a flag, a function)."""
        keyword = self.env.submit_keyword
        return self.act(f"{keyword} {answer.strip()}" if answer and answer.strip() else keyword)

    def _act(self, action: str) -> Step:
        text = action.strip()
        self.turns += 1
        self._by_turn[self.turns - 1] = action
        self.valid_turns += 1
        if text == self.env.skip_keyword:
            self.done = True
            return Step("", 0.0, True)
        submitted, _ = self.env.parse_submit(text)
        if submitted:
            observation, reward, terminated, _, info = self.env.step(text)
            if not terminated:  # a wrong CTF flag: the episode goes on
                return Step(observation, float(reward), False, submitted=True)
            self.done = True
            if self.score_each_turn and self.best is not None and self.best.reward > float(reward):
                self.outcome = self._from(self.best, self.best_turn)
            else:
                self.outcome = Outcome(float(reward), bool(info.get("success")),
                                       _plain(_parts(info)), self.turns - 1, self.turns, True)
            return Step(observation, float(reward), True, submitted=True)
        observation, _, terminated, truncated, info = self.env.step(action)
        score = self.env.evaluate() if self.score_each_turn else None
        if score is not None and (self.best is None or score.reward > self.best.reward):
            self.best, self.best_turn = score, self.turns - 1
        if (score is not None and score.success and self.stop_at_success) or terminated \
                or truncated:
            self.done = True
        return Step(observation, None if score is None else float(score.reward), self.done,
                    exit_code=ActionInfo.read(info).exit_code)

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
        self.done = True
        if self.best is None:
            if self.turns and not self.valid_turns:
                self.outcome = Outcome(0.0, False, turns=self.turns)
                return self.outcome
            try:
                self.best = self.env.evaluate()
            except AgentFault as exc:
                self.outcome = Outcome(0.0, False, turns=self.turns, agent_fault=str(exc))
                return self.outcome
        self.outcome = self._from(self.best, self.best_turn)
        return self.outcome

    def _from(self, result: Evaluation, turn: int | None) -> Outcome:
        return Outcome(float(result.reward), bool(result.success), _plain(result.info), turn,
                       self.turns)


def _parts(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in ("turn", "submitted", "success")}


class EnvPool:
    """Idle environments by (benchmark, dataset, settings), reused between samples (a
    reset restores the pristine state); closed at exit or by :meth:`close`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, str, EnvSettings], list[IntercodeEnv]] = {}

    def acquire(self, env: str, dataset: str, settings: EnvSettings) -> IntercodeEnv:
        """An idle environment, or a new one."""
        with self._lock:
            idle = self._idle.get((env, dataset, settings))
            if idle:
                return idle.pop()
        return make_env(env, dataset, settings)

    def release(self, name: str, dataset: str, settings: EnvSettings, env: IntercodeEnv,
                broken: bool = False) -> None:
        """Give an environment back (a broken one is closed, never reused)."""
        if broken:
            env.close()
            return
        with self._lock:
            self._idle.setdefault((name, dataset, settings), []).append(env)

    def close(self) -> None:
        """Close every idle environment."""
        with self._lock:
            envs = [e for idle in self._idle.values() for e in idle]
            self._idle.clear()
        for env in envs:
            env.close()


POOL = EnvPool()
atexit.register(POOL.close)
