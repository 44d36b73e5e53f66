"""``--agent tools``: the model acts through native function calling.

Two tools, described from the benchmark's declaration (never from its name):
``execute(code)`` runs code in the environment, ``submit`` ends the task (with an
``answer`` where the benchmark takes one: a CTF flag, a Python function's name). The
tool calls of one reply run in order, each as one turn; each result goes back as a
``tool`` message answering its call's id. What the model gets wrong is answered, never
raised: a reply without a tool call gets a nudge (an invalid turn, as a reply without
code is under the paper's strategies), and malformed JSON arguments, an unknown tool or
a missing ``code`` are answered as a tool error (an invalid turn too). Replies are
bounded (:mod:`intercode.llm.replies`): past :data:`~intercode.llm.replies.MAX_TOOL_CALLS`
calls in one reply the rest are not run, and the model is told.

Without ``show_reward`` the episode is scored like ReAct (the submitted reward, or the
final state's when the turns run out); with it, like Try Again (each action scored, the
reward shown in the tool's result, the episode over at 1).
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from intercode.agents import prompts
from intercode.agents.base import Action
from intercode.agents.llm_base import LlmPolicy, StrategyOptions
from intercode.agents.parsing import control_action, first_sql_statement
from intercode.datasets import Task
from intercode.envs.bounds import MAX_ACTION
from intercode.errors import ConfigError
from intercode.llm.client import ChatClient, Completion, Message
from intercode.llm.replies import MAX_TOOL_CALLS, ToolCall

__all__ = ["ToolsPolicy"]

SHOWN_ARGUMENTS = 2000  # characters of a refused call's arguments kept in the record
SHOWN_NAME = 80  # characters of an unknown tool's name quoted back to the model


class ToolsPolicy(LlmPolicy):
    """Native tool calling: ``execute(code)`` and ``submit``."""

    name = "tools"
    stop_at_success = True

    def __init__(self, env: str, client: ChatClient, options: StrategyOptions | None = None):
        super().__init__(env, client, options)
        if self.options.show_reward and not self.benchmark.prompting.shows_reward:
            raise ConfigError(f"--show-reward: the {env} environment shows no reward (its "
                              "reward is only the check of a submitted answer)")
        self.score_each_turn = self.options.show_reward
        self.tools = prompts.tools(env)

    def reset(self, task: Task) -> None:
        """A fresh dialogue: instructions, then the task."""
        super().reset(task)
        self.messages: list[Message] = [
            {"role": "system", "content": prompts.tools_system(self.env,
                                                               self.options.show_reward)},
            {"role": "user", "content": prompts.tools_task(task.query)}]
        self.pending: deque[ToolCall] = deque()
        self.answering: str | None = None  # the id of the call the next observation answers
        self.nudged = False
        self.dropped = 0

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """Answer the last call; run the reply's next call, or ask the model."""
        if self.answering is not None:
            content = prompts.tools_result(self._cut(observation), reward,
                                           self.options.show_reward)
            self.messages.append({"role": "tool", "tool_call_id": self.answering,
                                  "content": content})
            self.answering = None
        elif self.nudged:
            self.messages.append({"role": "user", "content": observation})
        self.nudged = False
        if not self.pending and self.dropped:
            self.messages.append({"role": "user", "content": prompts.too_many_calls(
                self.dropped, MAX_TOOL_CALLS)})
            self.dropped = 0
        if self.pending:
            return self._run(self.pending.popleft())
        completion = self._call(self.messages, tools=self.tools)
        calls = completion.tool_calls
        message: Message = {"role": "assistant", "content": completion.text or None}
        if calls:
            message["tool_calls"] = [c.message() for c in calls]
        elif not completion.text:
            message["content"] = ""
        self.messages.append(message)
        if not calls:
            self.nudged = True
            return Action(completion.text, valid=False, note=prompts.no_tool_call(self.env),
                          meta=self._meta(tool_calls=0))
        self.pending.extend(calls)
        self.dropped = completion.dropped_calls
        return self._run(self.pending.popleft(), tool_calls=len(calls) + self.dropped)

    def _reply_text(self, completion: Completion) -> str:
        lines = [completion.text] if completion.text else []
        lines += [f"{c.name}({c.arguments})" for c in completion.tool_calls[:3]]
        more = len(completion.tool_calls) - 3 + completion.dropped_calls
        if more > 0:
            lines.append(f"[{more} more tool calls]")
        return _bounded("\n".join(lines), 4 * SHOWN_ARGUMENTS)

    def _run(self, call: ToolCall, **meta: Any) -> Action:
        """The action of one tool call (a refused call is an invalid action)."""
        self.answering = call.id
        info = self._meta(tool_call={"id": call.id, "name": call.name}, **meta)
        shown = _bounded(f"{call.name}({call.arguments})", SHOWN_ARGUMENTS)
        if call.name not in ("execute", "submit"):
            return Action(shown, valid=False, meta=info, note=(
                f"error: there is no tool {_bounded(call.name, SHOWN_NAME)!r}; the tools are "
                "execute and submit"))
        arguments, problem = _arguments(call.arguments)
        if problem is not None:
            return Action(shown, valid=False, meta=info, note=f"error: {call.name}: {problem}")
        if call.name == "submit":
            return self._submit(arguments, shown, info)
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            return Action(shown, valid=False, meta=info, note=(
                "error: execute needs a non-empty string argument 'code'"))
        if len(code) > MAX_ACTION:
            return Action(shown, valid=False, meta=info, note=(
                f"error: the code is {len(code)} characters long; at most {MAX_ACTION}"))
        control = control_action(code, self.env)
        if control is not None:  # `submit` / `skip` typed as code: what the env makes of it
            return Action(control.text, submit=control.kind == "submit", meta=info)
        if self.benchmark.parsing.statement == "sql":
            code = first_sql_statement(code) or code
        return Action(code, meta=info)

    def _submit(self, arguments: dict[str, Any], shown: str, info: dict[str, Any]) -> Action:
        if not prompts.submits_answer(self.env):
            return Action("submit", submit=True, meta=info)
        answer = arguments.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            return Action(shown, valid=False, meta=info, note=(
                "error: submit needs a non-empty string argument 'answer'"))
        answer = answer.strip()
        if "\n" in answer or len(answer) > MAX_ACTION:
            return Action(shown, valid=False, meta=info, note=(
                "error: the answer must be one line"))
        return Action(f"submit {answer}", submit=True, meta=info)


def _arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """The JSON object of a call's arguments, or why there is none."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"the arguments are not valid JSON ({exc})"
    except RecursionError:
        return {}, "the arguments are nested too deeply"
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, not {type(value).__name__}"
    return value, None


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"
