"""A scripted "model" that answers every strategy's prompts with the task's gold solution.

For showing the mechanics of a whole run against :class:`ScriptedChatServer` (tests,
benchmarks): it finds the task by the query quoted in the conversation, recognises the
strategy by its system message, and answers in that strategy's format. To exercise
retries and invalid replies, every ``detour``-th task first gets an answer without
code (Try Again, Plan & Solve) or a Thought without an Action (ReAct). To make
episodes of many turns (reports, benchmarks), ``wander=k`` has Try Again run task i's
gold only after ``i % (k + 1)`` commands that look around and solve nothing (after
``k`` of them for every task with ``spread=False``).

A request that offers tools (``--agent tools``) is answered with tool calls:
``execute`` with the gold, then ``submit`` with the benchmark's answer (both in one
reply on every odd task); a gold that is itself a submission (a CTF flag) follows the
benchmark's warm-up command. A detour is a reply without any tool call.
"""

from __future__ import annotations

import re
from typing import Any

from intercode.benchmarks import get
from intercode.datasets import Dataset, Task
from intercode.llm.scripted_server import Reply, call

__all__ = ["LOOK_AROUND", "GoldResponder"]

QUERY_PATTERNS = (re.compile(r'^Query: "(.*)"\n', re.DOTALL), re.compile(r"^Question: (.*)$",
                  re.DOTALL), re.compile(r"^Task: (.*)$", re.DOTALL))


# commands that look around and change nothing, by action language
LOOK_AROUND = {"sql": "SHOW TABLES", "bash": "ls", "python": "print('looking around')"}


class GoldResponder:
    """Answers with the gold of the task the conversation is about."""

    def __init__(self, dataset: Dataset, detour: int = 3, wander: int = 0,
                 spread: bool = True) -> None:
        self.dataset = dataset
        self.benchmark = get(dataset.env)
        self.detour = detour
        self.wander = wander
        self.spread = spread
        self.wandered: dict[int, int] = {}
        self.by_query: dict[str, Task] = {}
        for task in dataset:
            self.by_query.setdefault(task.query.strip(), task)

    def __call__(self, request: dict[str, Any]) -> Reply:
        messages = request.get("messages") or []
        task = self._task(messages)
        if task is None:
            return Reply("I cannot tell which task this is.")
        system = " ".join(m["content"] for m in messages if m.get("role") == "system")
        answers = sum(1 for m in messages if m.get("role") == "assistant")
        detour = self.detour > 0 and task.index % self.detour == 0
        if request.get("tools"):
            return self._tools(task, messages, detour and answers == 0)
        if "interleaved Thought" in system:
            return Reply(self._react(task, answers, detour))
        if "carried out the whole plan" in system:
            return Reply(self._fenced(self._code(task)))
        if "carry out your plan" in system:
            if detour and answers == 0:
                return Reply("Let me think about the first step.")
            return Reply(self._fenced(self._code(task)))
        if "write a plan" in system:
            return Reply("Plan:\n1. Run the command that answers the question.\n")
        if detour and answers == 0:
            return Reply("I would start by looking at the data.")
        warmup = self.benchmark.extra.get("gold_warmup")
        if warmup is not None and answers < 1:
            return Reply(str(warmup))
        done = self.wandered.get(task.index, 0)
        if done < (task.index % (self.wander + 1) if self.spread else self.wander):
            self.wandered[task.index] = done + 1
            return Reply(self._fenced(LOOK_AROUND.get(self.benchmark.prompting.language.lower(),
                                                      "ls")))
        return Reply(self._fenced(self._code(task)))

    def _tools(self, task: Task, messages: list[dict[str, Any]], detour: bool) -> Reply:
        if detour:
            return Reply("Let me read the task again before I act.")
        called = [c.get("function", {}).get("name") for m in messages
                  if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
        action = self.benchmark.gold_action(task)
        if action.startswith("submit "):  # the gold is the answer itself (a flag)
            first = str(self.benchmark.extra.get("gold_warmup") or "")
            submit = call("submit", {"answer": action.removeprefix("submit ")})
        else:
            first = action
            answer = self.benchmark.gold_submit(task).removeprefix("submit").strip()
            submit = call("submit", {"answer": answer} if answer else {})
        if "execute" in called or not first:
            return Reply(tool_calls=(submit,))
        execute = call("execute", {"code": first})
        return Reply(tool_calls=(execute, submit) if task.index % 2 else (execute,))

    def _task(self, messages: list[dict[str, Any]]) -> Task | None:
        for message in messages:
            if message.get("role") != "user":
                continue
            for pattern in QUERY_PATTERNS:
                match = pattern.match(str(message.get("content", "")))
                if match:
                    task = self.by_query.get(match.group(1).strip())
                    if task is not None:
                        return task
        return None

    def _code(self, task: Task) -> str:
        return self.benchmark.gold_action(task)

    def _fenced(self, code: str) -> str:
        if code.startswith("submit "):
            return code
        tag = self.benchmark.prompting.language.lower()
        return f"```{tag}\n{code}\n```"

    def _react(self, task: Task, answers: int, detour: bool) -> str:
        turn = answers + 1
        if detour and answers == 0:
            return f"Thought {turn}: I need to think about this question first."
        done = answers >= (2 if detour else 1)
        action = self.benchmark.gold_action(task)
        if action.startswith("submit "):  # the gold is handed in directly (a flag)
            return (f"Thought {turn}: I know the answer.\n"
                    f"Action {turn}: submit[{action.removeprefix('submit ')}]")
        if done:
            submit = self.benchmark.gold_submit(task)
            if submit.startswith("submit "):
                return (f"Thought {turn}: That should do it.\n"
                        f"Action {turn}: submit[{submit.removeprefix('submit ')}]")
            return f"Thought {turn}: That answers the question.\nAction {turn}: submit"
        return f"Thought {turn}: I run the solution.\nAction {turn}: execute[{action}]"
