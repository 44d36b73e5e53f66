"""Summaries of a run's records.

The headline ``success_rate`` and ``mean_reward`` are over every requested task that
can run here: an error, or a task with no record yet, counts as a failure with reward
0, so an agent cannot drop the tasks it fails by making them error. Skipped tasks
(which cannot run on this machine, e.g. CTF tasks that need the network) are listed
and left out of the denominator. ``success_rate_ok`` and ``mean_reward_ok`` are the
same over ``ok`` episodes only.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = ["summarize"]


def summarize(records: dict[int, dict[str, Any]], requested: int,
              known: Collection[int] = ()) -> dict[str, Any]:
    """Counts, success rates and mean rewards of the latest record of each task.

    ``requested`` is the number of tasks asked for, ``known`` the tasks with a known
    issue among them.
    """
    ok = [r for r in records.values() if r.get("status") == "ok"]
    errors = [r for r in records.values() if r.get("status") == "error"]
    skipped = [r for r in records.values() if r.get("status") == "skipped"]
    scored = max(0, requested - len(skipped))  # the headline denominator
    by_turn: dict[str, int] = {}
    for r in ok:
        if r.get("success") and r.get("best_turn") is not None:
            key = str(r["best_turn"] + 1)
            by_turn[key] = by_turn.get(key, 0) + 1
    return {**_counts(records, requested, scored, ok, errors, skipped, set(known)),
            "successes_by_turn": dict(sorted(by_turn.items(), key=lambda kv: int(kv[0]))),
            "success_by_turn": _success_curve(ok, scored),
            "by_category": _by_category(ok + errors),
            "llm": _llm_totals(records.values()),
            "error_tasks": sorted(int(r["task"]) for r in errors),
            "skipped_tasks": {str(r["task"]): r.get("error") for r in
                              sorted(skipped, key=lambda r: int(r["task"]))}}


def _reward(r: dict[str, Any]) -> float:
    """An episode's reward, 0 for an error or a missing reward."""
    return float(r["reward"]) if r.get("status") == "ok" and r.get("reward") is not None \
        else 0.0


def _rate(part: float, whole: int) -> float | None:
    return part / whole if whole else None


def _counts(records: dict[int, dict[str, Any]], requested: int, scored: int,
            ok: list[dict[str, Any]], errors: list[dict[str, Any]],
            skipped: list[dict[str, Any]], known: set[int]) -> dict[str, Any]:
    successes = sum(1 for r in ok if r.get("success"))
    total_reward = sum(_reward(r) for r in ok)
    skipped_tasks = {int(r["task"]) for r in skipped}
    clean_scored = scored - len(known - skipped_tasks)
    clean_success = sum(1 for r in ok if r.get("success") and int(r["task"]) not in known)
    return {
        "requested": requested,
        "finished": len(records),
        "ok": len(ok),
        "errors": len(errors),
        "skipped": len(skipped),
        "missing": max(0, requested - len(records)),
        "scored": scored,
        "success": successes,
        "success_rate": _rate(successes, scored),
        "mean_reward": _rate(total_reward, scored),
        "success_rate_ok": _rate(successes, len(ok)),
        "mean_reward_ok": _rate(total_reward, len(ok)),
        "error_rate": _rate(len(errors), len(records)),
        "success_rate_without_known_issues": _rate(clean_success, clean_scored),
        "known_issues": sum(1 for r in ok if r.get("known_issue")),
        "mean_turns": _rate(sum(len(r.get("turns") or []) for r in ok), len(ok)),
    }


def _success_curve(ok: list[dict[str, Any]], scored: int) -> dict[str, float]:
    """Share of the scored tasks solved within n turns, for n = 1 .. the longest
    episode (the paper's success-versus-turns curve)."""
    if not ok or not scored:
        return {}
    longest = max((len(r.get("turns") or []) for r in ok), default=0)
    solved_at = [r["best_turn"] + 1 for r in ok
                 if r.get("success") and r.get("best_turn") is not None]
    return {str(n): sum(1 for t in solved_at if t <= n) / scored
            for n in range(1, max(longest, 1) + 1)}


def _by_category(finished: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Success by category over ok and errored episodes (an error is a failure)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in finished:
        if r.get("category"):
            groups.setdefault(str(r["category"]), []).append(r)
    out = {}
    for name in sorted(groups):
        items = groups[name]
        won = sum(1 for r in items if r.get("status") == "ok" and r.get("success"))
        out[name] = {"episodes": len(items),
                     "errors": sum(1 for r in items if r.get("status") == "error"),
                     "success": won, "success_rate": won / len(items),
                     "mean_reward": sum(_reward(r) for r in items) / len(items)}
    return out


def _llm_totals(records: Any) -> dict[str, Any] | None:
    calls = [r["llm"] for r in records if isinstance(r.get("llm"), dict)]
    if not calls:
        return None
    total = {key: sum(c.get(key) or 0 for c in calls)
             for key in ("calls", "prompt_tokens", "completion_tokens", "latency_s")}
    total["mean_latency_s"] = total["latency_s"] / total["calls"] if total["calls"] else None
    if any("reasoning_tokens" in c for c in calls):
        total["reasoning_tokens"] = sum(c.get("reasoning_tokens") or 0 for c in calls)
    return total


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as plain text: :func:`intercode.runner.summary_view.format_summary`."""
    from intercode.runner.summary_view import format_summary as plain

    return plain(summary)
