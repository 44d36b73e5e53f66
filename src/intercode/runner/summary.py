"""Summaries of a run's records."""

from __future__ import annotations

from typing import Any


def summarize(records: dict[int, dict[str, Any]], requested: int) -> dict[str, Any]:
    """Counts, success rate and mean reward of the latest record of each task."""
    ok = [r for r in records.values() if r.get("status") == "ok"]
    errors = [r for r in records.values() if r.get("status") == "error"]
    skipped = [r for r in records.values() if r.get("status") == "skipped"]
    rewards = [float(r["reward"]) for r in ok if r.get("reward") is not None]
    successes = [r for r in ok if r.get("success")]
    clean = [r for r in ok if not r.get("known_issue")]
    by_turn: dict[str, int] = {}
    for r in successes:
        turn = r.get("best_turn")
        if turn is not None:
            by_turn[str(turn + 1)] = by_turn.get(str(turn + 1), 0) + 1
    return {
        "requested": requested,
        "finished": len(records),
        "ok": len(ok),
        "errors": len(errors),
        "skipped": len(skipped),
        "missing": max(0, requested - len(records)),
        "success": len(successes),
        "success_rate": len(successes) / len(ok) if ok else None,
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
        "error_rate": len(errors) / len(records) if records else None,
        "success_rate_without_known_issues": (
            sum(1 for r in clean if r.get("success")) / len(clean) if clean else None),
        "known_issues": sum(1 for r in ok if r.get("known_issue")),
        "successes_by_turn": dict(sorted(by_turn.items(), key=lambda kv: int(kv[0]))),
        "mean_turns": (sum(len(r.get("turns", [])) for r in ok) / len(ok)) if ok else None,
        "error_tasks": sorted(int(r["task"]) for r in errors),
        "skipped_tasks": {str(r["task"]): r.get("error") for r in
                          sorted(skipped, key=lambda r: int(r["task"]))},
    }


def format_summary(summary: dict[str, Any]) -> str:
    """A few human-readable lines."""
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    lines = [
        f"episodes   {summary['finished']}/{summary['requested']} finished, "
        f"{summary['ok']} ok, {summary['errors']} errors"
        + (f", {summary['skipped']} skipped" if summary.get("skipped") else ""),
        f"success    {summary['success']} ({pct(summary['success_rate'])} of ok episodes)",
        f"reward     mean {num(summary['mean_reward'])}",
    ]
    if summary.get("known_issues"):
        lines.append(f"known      {summary['known_issues']} tasks with known issues; success "
                     f"without them {pct(summary['success_rate_without_known_issues'])}")
    if summary["errors"]:
        lines.append(f"errors     tasks {summary['error_tasks'][:20]}")
    return "\n".join(lines)
