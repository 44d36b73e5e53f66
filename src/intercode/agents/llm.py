"""LLM policies: the paper's strategies over any Chat Completions model.

* ``single-turn``: one reply, scored (Try Again with one turn);
* ``try-again``: after every action the state is scored and the model sees the output
  and the reward; the episode stops at 1.0 or after the turn limit (10 by default);
* ``react``: Thought / Action / Observation with ``execute[...]`` and ``submit``; the
  reward is the submitted one (or the final state's when the turns run out);
* ``plan-solve``: the model writes a numbered plan, executes it one step per turn, then
  has a few turns to repair what is still wrong (``refine_turns``);
* ``tools``: native function calling, ``execute(code)`` and ``submit`` (see
  :mod:`intercode.agents.tools`).

Every model call's tokens and latency go into the action's ``meta`` (the episode log);
the raw reply too, since the action is parsed out of it, and the ids of the messages
each call sent (``prompts``; the messages themselves in :meth:`episode_messages`).
"""

from __future__ import annotations

import re
from typing import Any

from intercode.agents import prompts
from intercode.agents.base import Action
from intercode.agents.llm_base import (
    OBSERVATION_LIMITS,
    LlmPolicy,
    StrategyOptions,
)
from intercode.agents.parsing import parse_code, parse_react
from intercode.agents.tools import ToolsPolicy
from intercode.datasets import Task
from intercode.llm.client import Message


class TryAgainPolicy(LlmPolicy):
    """The model sees each action's output and reward and tries again, up to the turn limit."""

    name = "try-again"
    score_each_turn = True
    stop_at_success = True
    max_actions: int | None = None

    def reset(self, task: Task) -> None:
        """A fresh dialogue: instructions, then the query."""
        super().reset(task)
        self.messages: list[Message] = [
            {"role": "system", "content": prompts.try_again_system(self.env)},
            {"role": "user", "content": prompts.try_again_query(self.env, task.query)}]
        self.actions = 0
        self._last: Action | None = None

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """Show the last output and reward; parse the model's next command."""
        assert self.task is not None
        if self.max_actions is not None and self.actions >= self.max_actions:
            return None
        if self._last is not None:
            shown = observation
            failed = self.benchmark.prompting.failed_definition
            if (failed is not None and self._last.valid
                    and self._last.text.lstrip().startswith("def ")
                    and reward is not None and reward < 1):
                shown = failed
            self.messages.append({"role": "user", "content": prompts.try_again_observation(
                self.env, self.task.query, self._cut(shown), reward)})
            self._trim()
        reply = self._ask(self.messages)
        parsed = parse_code(reply, self.env)
        self.messages.append({"role": "assistant",
                              "content": parsed.text if parsed.kind != "none" else reply})
        self.actions += 1
        self._last = self._action(parsed, reply)
        return self._last

    def _trim(self) -> None:
        limit = self.options.dialogue_limit or self.benchmark.dialogue_limit
        if limit and len(self.messages) - 2 > limit:
            self.messages = self.messages[:2] + self.messages[-limit:]


class SingleTurnPolicy(TryAgainPolicy):
    """One reply, scored: the paper's single-turn setting."""

    name = "single-turn"
    max_actions = 1


class ReactPolicy(LlmPolicy):
    """Thought / Action / Observation; ``submit`` ends the episode with its reward."""

    name = "react"
    score_each_turn = False
    stop_at_success = False

    def reset(self, task: Task) -> None:
        """Instructions with worked examples, then the question."""
        super().reset(task)
        self.messages = [{"role": "system", "content": prompts.react_system(self.env)},
                         {"role": "user", "content": prompts.react_question(task.query)}]
        self.turn = 0

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """Show the last observation; parse the next Thought and Action."""
        if self.turn:
            self.messages.append({"role": "user", "content": prompts.react_observation(
                self.turn, self._cut(observation))})
        self.turn += 1
        reply = self._ask(self.messages,
                          stop=[f"\nObservation {self.turn}:", "\nObservation:"])
        thought, parsed = parse_react(reply, self.env)
        self.messages.append({"role": "assistant", "content": reply.strip()})
        return self._action(parsed, reply, note=prompts.react_not_an_action(self.env),
                            thought=thought)


REFINE_OBSERVATION_CHARS = 250
MAX_PLAN_STEPS = 20
PLAN_STEP = re.compile(r"^\s*\d+[.)]\s+(.*?)(?=^\s*\d+[.)]\s|\Z)", re.DOTALL | re.MULTILINE)


class PlanSolvePolicy(LlmPolicy):
    """Plan, execute the plan step by step, then repair for ``refine_turns`` turns."""

    name = "plan-solve"
    score_each_turn = True

    def reset(self, task: Task) -> None:
        """Nothing is asked until the first action."""
        super().reset(task)
        self.steps: list[str] | None = None
        self.plan_reply = ""
        self.position = 0
        self.refining = 0
        self.messages: list[Message] = []

    @property
    def stop_at_success(self) -> bool:  # type: ignore[override]
        """The plan is carried out to its end; repairs stop at a reward of 1."""
        return self.steps is not None and self.position >= len(self.steps)

    def episode_extra(self) -> dict[str, Any]:
        """The plan and its steps."""
        extra = super().episode_extra()
        if self.steps is not None:
            extra.update(plan=self.plan_reply, steps=self.steps)
        return extra

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """The next step's command, or the next repair."""
        assert self.task is not None
        if self.steps is None:
            self._plan()
        assert self.steps is not None
        if self.position < len(self.steps):
            step = self.steps[self.position]
            shown = None if self.position == 0 else self._cut(observation)
            self.messages.append({"role": "user", "content": prompts.execute_step(step, shown)})
            self.position += 1
            return self._reply(step=step)
        if reward is not None and reward >= 1.0:
            return None
        if self.refining >= self.options.refine_turns:
            return None
        if self.refining == 0:
            self.messages.append({"role": "system", "content": prompts.refine_system(self.env)})
        self.refining += 1
        text = self._cut(observation, REFINE_OBSERVATION_CHARS)
        self.messages.append({"role": "user", "content": text if text.strip() else
                              prompts.NO_OUTPUT})
        return self._reply(refine=self.refining)

    def _plan(self) -> None:
        assert self.task is not None
        messages = [{"role": "system", "content": prompts.plan_system(self.env)},
                    {"role": "user", "content": prompts.plan_question(self.task.query)}]
        self.plan_reply = self._ask(messages)
        steps = [" ".join(s.split()) for s in PLAN_STEP.findall(self.plan_reply)]
        self.steps = [s for s in steps if s][:MAX_PLAN_STEPS] or [self.task.query]
        self.messages = [*messages,
                         {"role": "system", "content": prompts.execute_plan_system(self.env)}]

    def _reply(self, **meta: Any) -> Action:
        reply = self._ask(self.messages)
        parsed = parse_code(reply, self.env)
        self.messages.append({"role": "assistant", "content": reply.strip()})
        return self._action(parsed, reply, **meta)


POLICIES: dict[str, type[LlmPolicy]] = {
    "single-turn": SingleTurnPolicy, "try-again": TryAgainPolicy, "react": ReactPolicy,
    "plan-solve": PlanSolvePolicy, "tools": ToolsPolicy}
__all__ = ["OBSERVATION_LIMITS", "POLICIES", "LlmPolicy", "PlanSolvePolicy", "ReactPolicy",
           "SingleTurnPolicy", "StrategyOptions", "ToolsPolicy", "TryAgainPolicy"]
