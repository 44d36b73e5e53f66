"""Run one episode of a policy in an environment and turn it into a record."""

from __future__ import annotations

import datetime as dt
import time
import traceback
from collections.abc import Callable
from typing import Any

from intercode.agents.base import Policy
from intercode.envs.bounds import task_index
from intercode.envs.core.base import EnvCore
from intercode.envs.driver import RETRY_MESSAGE, EpisodeDriver
from intercode.errors import (
    AgentFault,
    FatalRunError,
    GoldError,
    IntercodeError,
    ModelRejected,
    TaskUnavailable,
)
from intercode.runner.records import EpisodeRecord, Turn

__all__ = ["run_episode", "run_task"]


def run_episode(env: EnvCore, index: int, policy: Policy, max_turns: int | None = None,
                worker: int = 0, known_issue: str | None = None) -> EpisodeRecord:
    """Play task ``index``; infrastructure failures give a record with status error.

    A :class:`FatalRunError` (bad model credentials, ...) is not recorded: it stops the run.
    """
    index = task_index(index, len(env.dataset))
    started = time.perf_counter()
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    task = env.dataset[index]
    base: dict[str, Any] = dict(
        env=env.env_name, dataset=env.dataset.name, task=index, source=task.source,
        source_index=task.source_index, query=task.query, agent=policy.name, started_at=stamp,
        worker=worker, known_issue=known_issue, category=task.category)
    turns: list[Turn] = []
    stops: list[str] = []

    def finish(**fields: Any) -> EpisodeRecord:
        try:
            extra = policy.episode_extra()
        except Exception:  # the record matters more than the policy's extras
            extra = {}
        try:
            messages = policy.episode_messages() or None
        except Exception:
            messages = None
        return EpisodeRecord(**base, **fields, turns=tuple(turns), llm=llm_totals(turns, extra),
                             extra=extra, messages=messages,
                             duration_s=time.perf_counter() - started)

    try:
        reward, success, info, best_turn = _play(env, index, policy, max_turns, turns, stops)
    except FatalRunError:
        raise
    except AgentFault as exc:  # the agent broke its own sandbox: its outcome, scored 0
        return finish(status="ok", reward=0.0, success=False,
                      agent_fault=_short(str(exc) or type(exc).__name__))
    except TaskUnavailable as exc:
        turns.clear()
        return finish(status="skipped", reward=None, success=None, error=str(exc))
    except IntercodeError as exc:
        return finish(status="error", reward=None, success=None,
                      error=_short(f"{type(exc).__name__}: {exc}"))
    except Exception as exc:  # a bug must not lose the run: record it
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return finish(status="error", reward=None, success=None,
                      error=_short(f"unexpected {detail}"))
    return finish(status="ok", reward=reward, success=success, reward_info=info,
                  best_turn=best_turn, stop_reason=_short(stops[0]) if stops else None)


ERROR_CHARS = 4096


def _short(text: str) -> str:
    """An error text of bounded size (it may quote an action of any length)."""
    if len(text) <= ERROR_CHARS:
        return text
    return f"{text[:ERROR_CHARS]}... [{len(text) - ERROR_CHARS} more characters]"


def run_task(env: EnvCore | None, make_env: Callable[[], EnvCore], index: int,
             policy: Policy, max_turns: int | None = None, worker: int = 0,
             known_issue: str | None = None) -> tuple[EpisodeRecord, EnvCore | None]:
    """Run one task and return its record and the environment for the next one (None:
    build a new one). An error before any turn (a reset that failed, perhaps because of
    what an earlier episode left) is tried once more in a fresh environment, so that an
    innocent task does not pay for its predecessor; never more than once."""
    for attempt in (1, 2):
        created = env is None
        env = env or make_env()
        try:
            record = run_episode(env, index, policy, max_turns, worker, known_issue)
        except BaseException:  # the run stops; the caller closes only what it passed in
            if created:
                env.close()
            raise
        if needs_new_env(record):
            env.close()
            env = None
        if attempt == 2 or record.status != "error" or record.turns:
            break
    return record, env


def needs_new_env(record: EpisodeRecord) -> bool:
    """Whether the next episode should start in a fresh environment: after an error
    or an agent fault, the old one may be in any state (not after a gold that fails on
    its own: the environment is sound, see :class:`~intercode.errors.GoldError`)."""
    if record.status == "error" and (record.error or "").startswith(f"{GoldError.__name__}:"):
        return False
    return record.status == "error" or record.agent_fault is not None


def llm_totals(turns: list[Turn], extra: dict[str, Any]) -> dict[str, Any] | None:
    """Model calls, tokens and latency of an episode (None when no model was called)."""
    parts = [t.llm for t in turns if t.llm] + list(extra.get("llm_unattached") or [])
    if not parts:
        return None
    total: dict[str, Any] = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                             "latency_s": 0.0}
    for part in parts:
        for key in total:
            total[key] += _number(part.get(key))
    reasoning = [p["reasoning_tokens"] for p in parts if "reasoning_tokens" in p]
    if reasoning:  # reasoning tokens are part of the completion tokens
        total["reasoning_tokens"] = sum(_number(r) for r in reasoning)
    return total


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _next_action(policy: Policy, observation: str, feedback: float | None,
                 turns: list[Turn], stops: list[str]) -> Any:
    """The policy's next action; ``None`` ends the episode. A request the model server
    refuses after the episode's first answer ends it as the agent's outcome."""
    try:
        return policy.act(observation, feedback)
    except ModelRejected as exc:
        if not any(t.llm for t in turns):
            raise
        stops.append(str(exc))
        return None


def _play(env: EnvCore, index: int, policy: Policy, max_turns: int | None,
          turns: list[Turn], stops: list[str]) -> tuple[float, bool, dict[str, Any], int | None]:
    episode = EpisodeDriver(env, index, policy.score_each_turn)
    assert env.task is not None
    policy.reset(env.task)
    observation = episode.query
    feedback: float | None = None
    while max_turns is None or len(turns) < max_turns:
        action = _next_action(policy, observation, feedback, turns, stops)
        if action is None:
            break
        if not action.valid:
            episode.invalid()
            observation = action.note or RETRY_MESSAGE
            turns.append(Turn(action.text, observation, 0.0, valid=False, llm=action.meta))
            feedback = 0.0 if policy.score_each_turn else None
            continue
        if action.text.strip() == env.skip_keyword:
            episode.skip()
            turns.append(Turn(action.text, "", 0.0, llm=action.meta))
            break
        clock = time.perf_counter()
        if action.submit:
            text = action.text.strip() or env.submit_keyword
            step = episode.submit(text)
            observation = step.observation
            turns.append(Turn(text, observation, step.reward, submit=True, llm=action.meta,
                              env_s=round(time.perf_counter() - clock, 6)))
            if step.done:
                break
            feedback = step.reward  # a wrong CTF flag: the episode goes on
            continue
        step = episode.execute(action.text, policy.stop_at_success)
        observation = step.observation
        turns.append(Turn(action.text, observation, step.reward, exit_code=step.exit_code,
                          timed_out=step.timed_out, llm=action.meta,
                          env_s=round(time.perf_counter() - clock, 6)))
        feedback = step.reward
        if step.done:
            break
    result = episode.finish()
    return result.reward, result.success, result.info, result.best_turn
