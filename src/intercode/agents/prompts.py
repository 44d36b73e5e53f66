"""Prompts of the paper's strategies, per environment (our wording, the paper's structure).

Try Again: a system message with the task and the format, the query, then after every
action its output *and reward* with the query restated (CTF: the output only, the flag
check tells). ReAct: instructions and worked examples of Thought / Action /
Observation with ``execute[...]`` and ``submit``. Plan & Solve: instructions and
examples of numbered plans, then a message to execute the plan step by step, then one
to repair what is still wrong.
"""

from __future__ import annotations

from typing import Any

from intercode.benchmarks import get
from intercode.benchmarks.spec import Prompting

__all__ = ["NO_OUTPUT", "execute_plan_system", "execute_step", "no_tool_call", "plan_question",
           "plan_system", "react_not_an_action", "react_observation", "react_question",
           "react_system", "refine_system", "submits_answer", "too_many_calls", "tools",
           "tools_result", "tools_system", "tools_task", "try_again_observation", "try_again_query",
           "try_again_system"]

NO_OUTPUT = "No output"


def dialect(env: str) -> Prompting:
    """How the benchmark ``env`` is named and shown in the prompts."""
    return get(env).prompting


# -- Try Again (and single-turn) -------------------------------------------------------------

def try_again_system(env: str) -> str:
    """The system message of Try Again."""
    d = dialect(env)
    if d.try_again_system is not None:
        return d.try_again_system
    return (f"You answer questions by writing {d.language} code that runs on a {d.setting}.\n"
            f"Every reply is one {d.language} command, in this format:\n"
            f"```{d.language}\nyour {d.language} code\n```\n"
            "Write nothing except that code block: no explanation, no expected output.\n"
            "After each reply you see what your code printed, as 'Output: <text>', and a "
            "reward between 0 and 1 that says how close the result is to the answer. "
            "Keep improving your code until the reward is 1.\n" + d.try_again_note)


def try_again_query(env: str, query: str) -> str:
    """The first user message."""
    d = dialect(env)
    if d.try_again_query is not None:
        return d.try_again_query.replace("{query}", query)
    return f'Query: "{query}"\nReply with code only; do not write its output or the reward.\n'


def try_again_observation(env: str, query: str, observation: str, reward: float | None) -> str:
    """What the model sees after an action."""
    shown = observation if observation.strip() else NO_OUTPUT
    d = dialect(env)
    if not d.shows_reward:
        return f"Output: {shown}"
    return (f"{d.setting} Output: {shown}\nReward: {_reward(reward)}\n"
            f'The query again: "{query}"\n'
            f"Write a different {d.language} command to reach a reward of 1. "
            "Reply with code only.\n")


def _reward(reward: float | None) -> str:
    if reward is None:
        return "0"
    return f"{reward:g}" if reward in (0.0, 1.0) else f"{reward:.2f}"


# -- ReAct -----------------------------------------------------------------------------------

def react_system(env: str) -> str:
    """Instructions and worked examples of ReAct."""
    d = dialect(env)
    goal = d.react_goal or f"answer a question by running {d.language} code on a {d.setting}"
    submit = d.react_submit or ("(2) submit, which says that the last observation (or the "
                                "current state) is the answer and ends the task")
    return (f"Your job is to {goal}. Work in interleaved Thought, Action and Observation "
            "steps. A Thought reasons about what you know and what to do next. An Action is "
            f"one of two kinds: (1) execute[<{d.language} code>], which runs the code and "
            f"shows you its output as the next Observation; {submit}.\n"
            "Write exactly one Thought and one Action per reply, numbered like the examples, "
            "and never write an Observation yourself.\n\nExamples:\n\n"
            + d.react_examples)


def react_question(query: str) -> str:
    """The first user message."""
    return f"Question: {query}"


def react_observation(turn: int, observation: str) -> str:
    """What the model sees after action ``turn``."""
    return f"Observation {turn}: {observation if observation.strip() else NO_OUTPUT}"


def react_not_an_action(env: str) -> str:
    """The observation for a reply without a valid Action."""
    d = dialect(env)
    return (f"Your last reply had no valid Action: write `Action <n>: execute[<{d.language} "
            "code>]` or `Action <n>: submit`.")


# -- Plan & Solve ----------------------------------------------------------------------------

def plan_system(env: str) -> str:
    """Instructions and examples for writing the plan."""
    d = dialect(env)
    return (f"You will solve a task with {d.language} code on a {d.setting}. First understand "
            "the task and write a plan: a numbered list of short steps, each of which one "
            f"{d.language} command can carry out. Then you will carry the plan out step by "
            "step. Reply now with the plan only, as in the examples.\n\nExamples:\n\n"
            + d.plan_examples)


def plan_question(query: str) -> str:
    """The first user message of the planning phase."""
    return f"Question: {query}"


def execute_plan_system(env: str) -> str:
    """The system message of the execution phase."""
    d = dialect(env)
    extra = d.execute_note
    return ("Now carry out your plan, one step per turn. Each turn you get the output of "
            "your last command as 'Observation: ...' and the next step as 'Step: ...'. "
            f"Reply with the {d.language} code for that step only, in this format:\n"
            f"```{d.language}\nyour {d.language} code\n```{extra}")


def execute_step(step: str, observation: str | None) -> str:
    """A user message of the execution phase."""
    if observation is None:
        return f"Step: {step}"
    return f"Observation: {observation if observation.strip() else NO_OUTPUT}\nStep: {step}"


def refine_system(env: str) -> str:
    """The system message after the plan, when the task is not solved yet."""
    d = dialect(env)
    return ("You have carried out the whole plan, but the task does not look solved yet. "
            "Keep working on it: each turn you see the last output; reply with the next "
            f"{d.language} command only, in this format:\n```{d.language}\nyour {d.language} "
            "code\n```")


# -- native tool calling ---------------------------------------------------------------------

DEFAULT_ANSWER = "the answer to hand in"


def submits_answer(env: str) -> bool:
    """Whether the submit tool takes an ``answer`` (a flag, a function name)."""
    return get(env).parsing.submit_argument


def tools(env: str) -> list[dict[str, Any]]:
    """The Chat Completions ``tools`` of ``env``: ``execute(code)`` and ``submit``."""
    d = dialect(env)
    execute: dict[str, Any] = {"type": "function", "function": {
        "name": "execute",
        "description": f"Run {d.language} code on the {d.setting} and return its output.",
        "parameters": {"type": "object", "properties": {"code": {
            "type": "string", "description": f"the {d.language} code to run"}},
            "required": ["code"]}}}
    if submits_answer(env):
        answer = d.submit_answer or DEFAULT_ANSWER
        submit: dict[str, Any] = {"type": "function", "function": {
            "name": "submit", "description": f"Hand in {answer}; a right answer ends the task.",
            "parameters": {"type": "object", "properties": {"answer": {
                "type": "string", "description": answer}}, "required": ["answer"]}}}
    else:
        submit = {"type": "function", "function": {
            "name": "submit",
            "description": "Say that the task is done: the current state is the answer. "
                           "This ends the task.",
            "parameters": {"type": "object", "properties": {}}}}
    return [execute, submit]


def tools_system(env: str, show_reward: bool) -> str:
    """The system message of native tool calling."""
    d = dialect(env)
    goal = d.react_goal or f"answer a question by running {d.language} code on a {d.setting}"
    if submits_answer(env):
        submit = f"submit(answer) hands in {d.submit_answer or DEFAULT_ANSWER}"
    else:
        submit = "submit() says the task is done, the current state being the answer"
    reward = ("After each execute you also see a reward between 0 and 1 that says how close "
              "the current state is to the answer; the task ends when it reaches 1.\n"
              if show_reward else "")
    note = d.tools_note if d.tools_note is not None else d.try_again_note
    return (f"Your job is to {goal}. You act only through tools: execute(code) runs "
            f"{d.language} code on the {d.setting} and returns its output; {submit}. "
            "Call one tool at a time and look at its result before the next; when you are "
            "done, call submit.\n" + reward + note)


def tools_task(query: str) -> str:
    """The first user message."""
    return f"Task: {query}"


def tools_result(observation: str, reward: float | None, show_reward: bool) -> str:
    """A tool message: the output (and the reward, when shown)."""
    shown = observation if observation.strip() else NO_OUTPUT
    return f"{shown}\nReward: {_reward(reward)}" if show_reward else shown


def no_tool_call(env: str) -> str:
    """What a reply without a tool call gets."""
    return ("Your reply called no tool. Act through the tools: call execute with "
            f"{dialect(env).language} code to run, or submit when you are done.")


def too_many_calls(dropped: int, kept: int) -> str:
    """The note after a reply with more tool calls than are run."""
    return (f"Only the first {kept} tool calls of a reply are run; the other {dropped} were "
            "not. Call one tool at a time.")
