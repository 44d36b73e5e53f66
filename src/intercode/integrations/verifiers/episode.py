"""One rollout's tool-calling loop: the model's calls run on a warm intercode environment.

The loop is the native tool-calling agent's (``--agent tools``): the model gets the
tools ``execute(code)`` and ``submit`` (with ``answer`` where the benchmark takes one)
and each of its tool calls is answered in order, by id; a reply without a tool call
ends the episode. Every tool call counts as one turn; past the turn limit, or once the
episode is over, calls are answered without running. Nothing the model sends
raises: malformed arguments and unknown tools are answered as tool results. The reward
is intercode's in the chosen mode: the submission's, else the final state's; 0.0 when
the environment failed (:attr:`Outcome.fault` says how).

No verifiers import here: the model is any ``chat`` coroutine (messages in, the
assistant message out as a Chat Completions dict, or ``None`` when the rollout was
stopped from outside, e.g. by verifiers' own turn or token limits).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from intercode.benchmarks import get
from intercode.integrations.trl.environment import IntercodeTrlEnv
from intercode.integrations.verifiers.pool import EnvPool

__all__ = ["Chat", "Outcome", "play", "turn_limit"]

Chat = Callable[[list[dict[str, Any]]], Awaitable[dict[str, Any] | None]]

LIMIT_REACHED = "The turn limit is reached: no more actions run."


@dataclass(frozen=True)
class Outcome:
    """How one episode ended."""

    reward: float
    turns: int  # tool calls answered, each one turn
    submitted: bool
    fault: str | None  # the environment's failure, if any (then the reward is 0.0)


def turn_limit(benchmark: str, max_turns: int | None) -> int | None:
    """The tool calls an episode takes at most: ``max_turns``, else the benchmark's."""
    return max_turns if max_turns is not None else get(benchmark).max_turns


async def play(pool: EnvPool, env: IntercodeTrlEnv, row: dict[str, Any],
               messages: list[dict[str, Any]], chat: Chat) -> Outcome:
    """The episode of ``row`` (``benchmark``, ``dataset``, ``task``) on ``env``, the
    model answering through ``chat``; ``messages`` (the prompt) grows with the
    conversation. Only ``chat``'s own exceptions leave this function."""
    limit = turn_limit(env.benchmark, env.max_turns)
    problem = await pool.run(env.reset, **row)
    if problem is not None:  # the task could not start: said in the fault, scored 0.0
        return Outcome(0.0, 0, False, env.fault or problem)
    turns = 0
    while not env.over and (limit is None or turns < limit):
        message = await chat(messages)
        if message is None:
            break
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            break
        for call in calls:
            if limit is not None and turns >= limit:
                content = LIMIT_REACHED
            else:  # once the episode is over, the environment answers so without running
                turns += 1
                content = await pool.run(_answer, env, call)
            messages.append({"role": "tool", "tool_call_id": _call_id(call), "content": content})
    reward = await pool.run(env.get_reward)
    return Outcome(reward, turns, env.final is not None, env.fault)


def _answer(env: IntercodeTrlEnv, call: object) -> str:
    """The tool result of one call (run in a pool thread: it may step the environment)."""
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    raw = function.get("arguments") if isinstance(function, dict) else None
    if name not in ("execute", "submit"):
        shown = name if isinstance(name, str) else type(name).__name__
        return f"error: unknown tool {shown[:100]!r}; the tools are execute and submit"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw or {}
    except (json.JSONDecodeError, RecursionError) as exc:
        return f"error: the arguments of {name} are not valid JSON ({type(exc).__name__})"
    if not isinstance(arguments, dict):
        return f"error: the arguments of {name} must be a JSON object"
    tool = getattr(env, name)
    if name == "execute":
        return str(tool(arguments.get("code")))
    if get(env.benchmark).parsing.submit_argument:
        return str(tool(arguments.get("answer")))
    return str(tool())


def _call_id(call: object) -> str:
    value = call.get("id") if isinstance(call, dict) else None
    return value if isinstance(value, str) else ""
