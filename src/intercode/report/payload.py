"""The data a report's page script renders: every episode and its transcript.

Compact on purpose (a 1034-episode run of ten turns fits in a few megabytes once
gzipped): episodes are rows of a table, transcripts keep at most
:data:`OBSERVATION_CHARS` of each output, and every message the model saw is stored
once, by id, for all runs.
"""

from __future__ import annotations

import base64
import gzip
from typing import Any

from intercode.report.runs import Run, invalid_label
from intercode.runner.logs import encode_json

__all__ = ["build_payload", "pack"]

OBSERVATION_CHARS = 4000
TEXT_CHARS = 20000  # any other single text (a reply, a message, an action)
QUERY_CHARS = 2000

# the columns of an episode row
EPISODE_COLUMNS = ("run", "task", "status", "reward", "success", "turns", "category", "query",
                   "error", "known_issue", "duration_s", "tokens")


def cut(text: Any, limit: int) -> str:
    """A text of at most ``limit`` characters, saying how much was left out."""
    value = "" if text is None else str(text)
    if len(value) <= limit:
        return value
    return f"{value[:limit]}\n… [{len(value) - limit} more characters not shown]"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _problem(rec: dict[str, Any]) -> str | None:
    for key in ("error", "agent_fault", "stop_reason"):
        if rec.get(key):
            label = {"agent_fault": "agent fault: ", "stop_reason": "stopped: "}.get(key, "")
            return cut(f"{label}{rec[key]}", 500)
    return None


def episode_row(index: int, task: int, rec: dict[str, Any] | None) -> list[Any]:
    """One row of the episode table (a requested task without a record is ``missing``)."""
    if rec is None:
        return [index, task, "missing", None, None, 0, None, "", "no record yet", None, None,
                None]
    llm = _dict(rec.get("llm"))
    tokens = (llm.get("prompt_tokens") or 0) + (llm.get("completion_tokens") or 0) if llm \
        else None
    reward = rec.get("reward")
    return [index, task, str(rec.get("status")),
            round(float(reward), 4) if isinstance(reward, int | float) else None,
            rec.get("success"), len(rec.get("turns") or []), rec.get("category"),
            cut(rec.get("query"), QUERY_CHARS), _problem(rec), rec.get("known_issue"),
            round(float(rec.get("duration_s") or 0), 3), tokens]


def transcript(rec: dict[str, Any], used: set[str]) -> dict[str, Any]:
    """An episode's turns as the page shows them; adds the message ids it names to
    ``used``."""
    turns = []
    for turn in rec.get("turns") or []:
        if not isinstance(turn, dict):
            continue
        llm = _dict(turn.get("llm"))
        prompts = [[str(i) for i in call] for call in llm.get("prompts") or []
                   if isinstance(call, list)]
        for call in prompts:
            used.update(call)
        item: dict[str, Any] = {"a": cut(turn.get("action"), TEXT_CHARS),
                                "o": cut(turn.get("observation"), OBSERVATION_CHARS),
                                "r": turn.get("reward")}
        if turn.get("valid") is False:
            item["v"] = 0
        if turn.get("submit"):
            item["s"] = 1
        if turn.get("exit_code") is not None:
            item["x"] = turn.get("exit_code")
        if turn.get("timed_out"):
            item["t"] = 1
        if prompts:
            item["p"] = prompts
        if llm.get("reply") is not None:
            item["y"] = cut(llm.get("reply"), TEXT_CHARS)
        if llm.get("thought"):
            item["th"] = cut(llm.get("thought"), TEXT_CHARS)
        if llm.get("calls") is not None:
            item["c"] = {k: llm.get(k) for k in ("calls", "prompt_tokens", "completion_tokens",
                                                 "latency_s")}
        turns.append(item)
    out: dict[str, Any] = {"turns": turns}
    for key in ("reward_info", "best_turn", "started_at", "agent", "source", "source_index",
                "agent_fault", "stop_reason", "error", "known_issue"):
        if rec.get(key) is not None:
            out[key] = rec[key]
    extra = _dict(rec.get("extra"))
    if extra.get("plan"):
        out["plan"] = cut(extra["plan"], TEXT_CHARS)
    return out


def build_payload(runs: list[Run]) -> dict[str, Any]:
    """Everything the page script needs, for all runs."""
    episodes: list[list[Any]] = []
    transcripts: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    meta = []
    for i, run in enumerate(runs):
        tasks = list(dict.fromkeys([*run.requested, *sorted(run.records)]))
        for task in tasks:
            rec = run.records.get(task)
            episodes.append(episode_row(i, task, rec))
            if rec is not None:
                transcripts[f"{i}/{task}"] = transcript(rec, used)
        meta.append({"label": run.label, "env": run.env, "dataset": run.dataset,
                     "agent": run.agent, "kind": run.kind, "invalid": invalid_label(run.kind),
                     "prompts_recorded": any(_has_prompts(r) for r in run.records.values())})
    messages = {}
    for run in runs:
        for mid in used & run.messages.keys():
            m = run.messages[mid]
            messages[mid] = [m.get("role"), cut(m.get("content"), TEXT_CHARS)]
    return {"columns": EPISODE_COLUMNS, "runs": meta, "episodes": episodes,
            "transcripts": transcripts, "messages": messages}


def _has_prompts(rec: dict[str, Any]) -> bool:
    return any(isinstance(t, dict) and isinstance(t.get("llm"), dict) and t["llm"].get("prompts")
               for t in rec.get("turns") or [])


def pack(payload: dict[str, Any]) -> str:
    """The payload as base64 of gzipped JSON (the page inflates it with the browser's
    DecompressionStream; base64 also keeps any ``</script>`` in agent text inert)."""
    raw = encode_json(payload)
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")
