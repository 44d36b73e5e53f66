"""Run one episode of a policy in an environment and turn it into a record."""

from __future__ import annotations

import datetime as dt
import time
import traceback
from typing import Any

from intercode.agents.base import Policy
from intercode.envs.base import Evaluation, IntercodeEnv
from intercode.errors import IntercodeError, TaskUnavailable
from intercode.runner.records import EpisodeRecord, Turn

RETRY_MESSAGE = "No action was found in the reply. Please try again."


def run_episode(env: IntercodeEnv, index: int, policy: Policy, max_turns: int | None = None,
                worker: int = 0, known_issue: str | None = None) -> EpisodeRecord:
    """Play task ``index``; infrastructure failures give a record with status error."""
    started = time.perf_counter()
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    task = env.dataset[index]
    base: dict[str, Any] = dict(
        env=env.env_name, dataset=env.dataset.name, task=index, source=task.source,
        source_index=task.source_index, query=task.query, agent=policy.name, started_at=stamp,
        worker=worker, known_issue=known_issue)
    turns: list[Turn] = []
    try:
        reward, success, info, best_turn = _play(env, index, policy, max_turns, turns)
    except TaskUnavailable as exc:
        return EpisodeRecord(**base, status="skipped", reward=None, success=None, turns=(),
                             error=str(exc), duration_s=time.perf_counter() - started)
    except IntercodeError as exc:
        return EpisodeRecord(**base, status="error", reward=None, success=None,
                             turns=tuple(turns), error=f"{type(exc).__name__}: {exc}",
                             duration_s=time.perf_counter() - started)
    except Exception as exc:  # a bug must not lose the run: record it
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return EpisodeRecord(**base, status="error", reward=None, success=None,
                             turns=tuple(turns), error=f"unexpected {detail}",
                             duration_s=time.perf_counter() - started)
    return EpisodeRecord(**base, status="ok", reward=reward, success=success,
                         turns=tuple(turns), reward_info=info, best_turn=best_turn,
                         duration_s=time.perf_counter() - started)


def _play(env: IntercodeEnv, index: int, policy: Policy, max_turns: int | None,
          turns: list[Turn]) -> tuple[float, bool, dict, int | None]:
    observation, _ = env.reset(options={"task": index})
    assert env.task is not None
    policy.reset(env.task)
    best: Evaluation | None = None
    best_turn: int | None = None
    while max_turns is None or len(turns) < max_turns:
        action = policy.act(observation)
        if action is None:
            break
        if action.submit:
            observation, reward, _, _, info = env.step(env.submit_keyword)
            turns.append(Turn(action.text, observation, float(reward), submit=True))
            return float(reward), bool(info.get("success")), info, len(turns) - 1
        if not action.valid:
            observation = RETRY_MESSAGE
            turns.append(Turn(action.text, observation, 0.0, valid=False))
            continue
        observation, _, terminated, truncated, info = env.step(action.text)
        score = env.evaluate() if policy.score_each_turn else None
        turns.append(Turn(action.text, observation, None if score is None else score.reward,
                          exit_code=info.get("exit_code"), timed_out=bool(info.get("timed_out"))))
        if score is not None and (best is None or score.reward > best.reward):
            best, best_turn = score, len(turns) - 1
        if score is not None and score.success and policy.stop_at_success:
            break
        if terminated or truncated:
            break
    if best is None:
        if turns:  # only replies without an action: scored 0 each, as upstream
            return 0.0, False, {}, None
        best = env.evaluate()
    return best.reward, best.success, best.info, best_turn
