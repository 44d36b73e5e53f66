"""Runs as the report, ``compare`` and ``show`` read them.

A run is an ``intercode eval`` folder (``results.jsonl``, ``config.json``,
``messages.jsonl``), its ``results.jsonl`` alone, or one of InterCode's own result files
(a JSON object of episodes with ``turn_history``, as the paper's recorded runs are).
Reading never changes the files: a torn last line or lines that are not records are
left where they are and said in :attr:`Run.notes`.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from intercode import safeio
from intercode.datasets.issue_table import issue_of
from intercode.errors import ConfigError
from intercode.runner.logs import ResultsLog, latest_by_task
from intercode.runner.messages import FILE_NAME as MESSAGES_FILE
from intercode.runner.messages import read_messages, readable
from intercode.runner.summary import summarize

__all__ = ["Run", "calls_of", "invalid_label", "load_run"]

UPSTREAM_ENVS = {"ic_bash": "bash", "ic_sql": "sql", "ic_python": "python", "ic_ctf": "ctf"}
# upstream's data files and the names of the same task lists here
UPSTREAM_DATASETS = {"dev_spider": "spider-dev", "ic_mbpp": "mbpp", "ic_ctf": "intercode-ctf",
                     **{f"nl2bash_fs_{n}": f"nl2bash-fs{n}" for n in range(1, 5)}}


# what a turn's ``valid: false`` means: intercode marks a reply it found no action in (or a
# refused tool call), never run; InterCode's own files copy ``valid_action``, which its
# environments set false for an action that ran and failed (an error, a non-zero exit)
# and its experiments for a reply without code
INVALID = {"intercode": "no valid action in the reply (not run)",
           "upstream": "the action failed or the reply had no code (upstream's valid_action "
                       "is false)"}


def invalid_label(kind: str) -> str:
    """How a turn with ``valid: false`` is labelled, for a run of this kind."""
    return INVALID.get(kind, INVALID["intercode"])


@dataclass
class Run:
    """One run's records and what is known of it."""

    path: Path
    label: str
    kind: str  # "intercode" or "upstream"
    config: dict[str, Any]
    records: dict[int, dict[str, Any]]  # the latest record of each task
    requested: tuple[int, ...]
    messages: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def env(self) -> str:
        """The environment (of the config, else of the records)."""
        return str(self.config.get("env") or _common(self.records, "env") or "?")

    @property
    def dataset(self) -> str:
        """The dataset's name."""
        return str(self.config.get("dataset") or _common(self.records, "dataset") or "?")

    @property
    def agent(self) -> str:
        """The agent, with the model when there is one."""
        agent = str(self.config.get("agent") or _common(self.records, "agent") or "?")
        model = self.config.get("model")
        if isinstance(model, dict) and model.get("model"):
            return f"{agent} ({model['model']})"
        return agent

    def summary(self) -> dict[str, Any]:
        """The summary over the requested tasks, computed from the records (as ``eval``
        computes it: errors and missing tasks count as failures)."""
        selected = {t: r for t, r in self.records.items() if t in set(self.requested)}
        known = {t for t, r in selected.items() if r.get("known_issue")}
        return summarize(selected, len(self.requested), known)

    def message(self, mid: str) -> dict[str, str] | None:
        """A message by id (the run's table, else the record's own)."""
        return self.messages.get(mid)


def _common(records: dict[int, dict[str, Any]], key: str) -> str | None:
    values = {str(r.get(key)) for r in records.values() if r.get(key) is not None}
    return values.pop() if len(values) == 1 else (", ".join(sorted(values)) or None)


def load_run(path: str | Path, label: str | None = None) -> Run:
    """Read a run; anything that is not one is a one-line :class:`ConfigError`."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    if path.is_dir():
        return _from_folder(path, label)
    if path.name.endswith(".jsonl"):
        return _from_folder(path.parent, label, results=path)
    return _from_upstream(path, label)


def _inside(folder: Path, path: Path) -> None:
    """Refuse a file of the run folder that is a symbolic link leading out of it (a
    shared run folder must not make ``report`` embed a file of the host)."""
    if path.is_symlink():
        real, top = os.path.realpath(path), os.path.realpath(folder)
        if os.path.commonpath([real, top]) != top:
            raise safeio.Refused("is a symbolic link that leads out of the run folder")


def _from_folder(folder: Path, label: str | None, results: Path | None = None) -> Run:
    named = results is not None  # a results file named on the command line
    results = results or folder / "results.jsonl"
    config_path = folder / "config.json"
    if not _exists(results) and not _exists(config_path):
        raise ConfigError(f"{folder} is not a run (it has neither results.jsonl nor "
                          "config.json)")
    notes: list[str] = []
    config: dict[str, Any] = {}
    if _exists(config_path):
        try:
            _inside(folder, config_path)
            loaded = safeio.loads(safeio.read_bytes(config_path))
            if isinstance(loaded, dict):
                config = loaded
            else:
                notes.append("config.json is not an object: the run's settings are unknown")
        except (OSError, ValueError, safeio.Refused) as exc:
            notes.append(f"config.json is unreadable ({_reason(exc)}): the run's settings "
                         "are unknown")
    else:
        notes.append("config.json is missing: the run's settings are unknown")
    log = ResultsLog(results)
    try:
        if not named:
            _inside(folder, results)
        lines = log.read()
    except (OSError, safeio.Refused) as exc:
        raise ConfigError(f"cannot read {results}: {_reason(exc)}") from None
    if log.skipped:
        notes.append(f"{len(log.skipped)} line(s) of {results.name} are not records and "
                     f"were left out (lines {log.skipped[:5]})")
    if _torn(results):
        notes.append(f"the last line of {results.name} is incomplete (a run still going, "
                     "or one that crashed mid-write); it was left out")
    if not results.exists():
        notes.append("results.jsonl is missing: no episode has finished")
    records = latest_by_task(lines)
    tasks = config.get("tasks")
    if isinstance(tasks, list) and all(type(t) is int for t in tasks):
        requested = tuple(tasks)
    else:
        requested = tuple(sorted(records))
    missing = [t for t in requested if t not in records]
    if missing and records:
        notes.append(f"{len(missing)} requested task(s) have no record yet (counted as "
                     "failures)")
    if not records:
        notes.append("the run has no episode records")
    try:
        _inside(folder, folder / MESSAGES_FILE)
        messages = read_messages(folder / MESSAGES_FILE)
    except (OSError, safeio.Refused) as exc:
        messages = {}
        notes.append(f"{MESSAGES_FILE} is unreadable ({_reason(exc)}): what the model saw "
                     "is not shown")
    for rec in records.values():  # records written outside the runner keep their own
        own = rec.get("messages")
        if isinstance(own, dict):
            for mid, m in own.items():
                if isinstance(m, dict) and isinstance(m.get("content"), str):
                    messages.setdefault(mid, {"role": str(m.get("role")),
                                              "content": readable(m)})
    return Run(path=folder, label=label or folder.name, kind="intercode", config=config,
               records=records, requested=requested, messages=messages, notes=notes)


def _exists(path: Path) -> bool:
    """Whether there is anything at ``path`` (a dangling symbolic link too)."""
    return os.path.lexists(path)


def _torn(path: Path) -> bool:
    try:
        with safeio.open_regular(path) as fh:
            size = fh.seek(0, 2)
            if size == 0:
                return False
            fh.seek(size - 1)
            return fh.read(1) != b"\n"
    except (OSError, safeio.Refused):
        return False


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc).splitlines()[0]


def _from_upstream(path: Path, label: str | None) -> Run:
    try:
        data = safeio.read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError, safeio.Refused) as exc:
        raise ConfigError(f"cannot read {path}: {_reason(exc)}") from None
    try:
        raw = safeio.loads(data)
    except ValueError as exc:
        raise ConfigError(f"{path} is neither a run folder nor a results file (not valid "
                          f"JSON: {_reason(exc)})") from exc
    if not isinstance(raw, dict) or not raw or not all(
            isinstance(ep, dict) and "turn_history" in ep for ep in raw.values()):
        raise ConfigError(f"{path} is neither a run folder nor an InterCode results file "
                          "(an object of episodes with turn_history)")
    records: dict[int, dict[str, Any]] = {}
    notes: list[str] = []
    bad = []
    for key, ep in raw.items():
        try:
            rec = _upstream_record(key, ep, path)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            bad.append(key)
            continue
        records[rec["task"]] = rec
    if bad:
        notes.append(f"{len(bad)} episode(s) of {path.name} are malformed and were left "
                     f"out ({bad[:5]})")
    envs = {r["env"] for r in records.values()}
    model = path.parent.name if path.parent.name not in ("", ".") else None
    config: dict[str, Any] = {"env": envs.pop() if len(envs) == 1 else None,
                              "dataset": _common(records, "dataset"),
                              "agent": "InterCode (upstream)", "source_file": str(path)}
    if model:
        config["model"] = {"model": model}
    turns = {r["extra"].get("turns_max") for r in records.values()}
    if len(turns) == 1:
        config["max_turns"] = turns.pop()
    return Run(path=path, label=label or path.stem, kind="upstream", config=config,
               records=records, requested=tuple(sorted(records)), notes=notes)


FS = re.compile(r"fs_(\d+)")


def _unit(value: Any) -> float:
    """A reward: a finite number from -1 to 1 (``ValueError`` for anything else)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("not a reward")
    reward = float(value)
    if not (math.isfinite(reward) and -1 <= reward <= 1):
        raise ValueError("not a reward")
    return reward


def _upstream_record(key: str, ep: dict[str, Any], path: Path) -> dict[str, Any]:
    hist = ep["turn_history"]
    actions = [str(a) for a in hist["actions"]]
    observations = list(hist.get("observations") or [])
    rewards = list(hist.get("rewards") or [])
    valid = list(hist.get("valid_action") or [])
    summary = ep.get("summary") or {}
    env = UPSTREAM_ENVS.get(str(ep.get("environment")), str(ep.get("environment") or "?"))
    stem = Path(str(ep.get("dataset") or path.stem)).stem
    dataset = UPSTREAM_DATASETS.get(stem, stem)
    best = summary.get("max_reward")
    reward = _unit(best) if best is not None else max((_unit(r) for r in rewards), default=0.0)
    turns = []
    for i, action in enumerate(actions):
        turns.append({"action": action,
                      "observation": str(observations[i]) if i < len(observations) else "",
                      "reward": _unit(rewards[i]) if i < len(rewards) else None,
                      "valid": bool(valid[i]) if i < len(valid) else True,
                      "submit": False, "exit_code": None, "timed_out": False, "llm": None,
                      "env_s": None})
    category = ep.get("hardness")
    if category is None and env == "bash":
        fs = FS.search(str(ep.get("dataset") or path.stem))
        category = f"nl2bash-fs{fs.group(1)}" if fs else None
    best_idx = summary.get("max_reward_idx")
    task = int(ep.get("task_id", key))
    issue = issue_of(dataset, task)  # intercode's list, as its own runs of the task carry
    return {"env": env, "dataset": dataset, "task": task,
            "source": dataset, "source_index": task,
            "known_issue": issue.reason if issue is not None else None,
            "query": str(ep.get("query") or ""), "agent": "upstream", "status": "ok",
            "reward": reward, "success": reward >= 1.0, "turns": turns,
            "best_turn": int(best_idx) if reward >= 1.0 and best_idx is not None else None,
            "category": str(category) if category else None,
            "reward_info": ep.get("info") if isinstance(ep.get("info"), dict) else None,
            "extra": {"turns_max": summary.get("turns_max")}}


def calls_of(turn: dict[str, Any], run: Run) -> list[list[dict[str, str]]]:
    """The messages of each model call that produced a turn's action, as the model saw
    them (a message the run did not keep is shown as missing)."""
    llm = turn.get("llm")
    if not isinstance(llm, dict) or not isinstance(llm.get("prompts"), list):
        return []
    calls = []
    for ids in llm["prompts"]:
        if not isinstance(ids, list):
            continue
        calls.append([run.message(str(mid)) or {"role": "?", "content": f"[message {mid} "
                                                "is not in the run's messages.jsonl]"}
                      for mid in ids])
    return calls
