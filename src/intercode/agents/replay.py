"""The replay policy: run recorded actions in order.

Reads InterCode result files (a JSON object of episodes with ``task_id`` and
``turn_history.actions``), intercode's own ``results.jsonl`` and Inspect logs
(:mod:`intercode.agents.replay_inspect`). Upstream did not
execute a reply without code (its observation is the retry message, "No ... code
was found in your last response") nor a ``blocked`` turn; neither is executed here.
Upstream's ``valid_action`` only says whether the command exited with status 0.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from intercode.agents.base import Action, Policy
from intercode.agents.recorded import Recorded
from intercode.agents.replay_inspect import load_inspect_log
from intercode.datasets import Task
from intercode.errors import DatasetError

__all__ = ["ReplayPolicy", "load_trajectories"]

RETRY = re.compile(r"^No \S+ code was found in your last response")


def load_trajectories(path: str | Path) -> dict[int, Recorded]:
    """Recorded episodes of a file, by task index."""
    path = Path(path)
    if path.suffix == ".eval" or _is_inspect_json(path):
        return load_inspect_log(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read trajectories from {path}: {exc}") from exc
    stripped = text.lstrip()
    if stripped.startswith("{") and not _is_jsonl(stripped):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: not valid JSON: {exc}") from exc
        return _from_intercode(raw, path)
    return _from_jsonl(text, path)


def _is_inspect_json(path: Path) -> bool:
    """Whether a ``.json`` file is an Inspect log (it starts with its version and status)."""
    if path.suffix != ".json":
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b'"eval"' in head and b'"version"' in head and b'"turn_history"' not in head


def _is_jsonl(text: str) -> bool:
    first = text.split("\n", 1)[0]
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(obj, dict) and "turns" in obj


def _from_intercode(raw: Any, path: Path) -> dict[int, Recorded]:
    if not isinstance(raw, dict):
        raise DatasetError(f"{path}: expected an object of episodes")
    out = {}
    for key, ep in raw.items():
        try:
            task = int(ep.get("task_id", key))
            hist = ep["turn_history"]
            observations = hist.get("observations") or []
            actions = []
            for i, text in enumerate(hist["actions"]):
                seen = str(observations[i]) if i < len(observations) else ""
                ok = text != "blocked" and not RETRY.search(seen)
                actions.append(Action(str(text), valid=ok))
            rewards = tuple(float(r) for r in hist.get("rewards", []))
            summary = ep.get("summary") or {}
            best = summary.get("max_reward")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DatasetError(f"{path}: episode {key!r} is malformed ({exc})") from exc
        out[task] = Recorded(task, tuple(actions), None if best is None else float(best), rewards)
    return out


def _from_jsonl(text: str, path: Path) -> dict[int, Recorded]:
    out = {}
    for n, line in enumerate(text.split("\n"), 1):  # JSON lines end at \n only
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            task = int(rec["task"])
            turns = rec.get("turns") or []
            actions = tuple(Action(str(t["action"]), valid=bool(t.get("valid", True)))
                            for t in turns if not t.get("submit"))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{path}:{n}: malformed record ({exc})") from exc
        if rec.get("status") == "ok":
            reward = rec.get("reward")
            out[task] = Recorded(task, actions, None if reward is None else float(reward))
    return out


class ReplayPolicy(Policy):
    """Plays the recorded actions of each task, scoring after every action."""

    name = "replay"
    stop_at_success = False

    def __init__(self, episodes: dict[int, Recorded]) -> None:
        self.episodes = episodes
        self._queue: list[Action] = []

    def reset(self, task: Task) -> None:
        """Queue the actions recorded for ``task`` (an error if there are none)."""
        recorded = self.episodes.get(task.index)
        if recorded is None:
            raise DatasetError(f"no recorded episode for task {task.index}")
        self._queue = list(recorded.actions)

    def act(self, observation: str, reward: float | None = None) -> Action | None:
        """The next recorded action."""
        return self._queue.pop(0) if self._queue else None
