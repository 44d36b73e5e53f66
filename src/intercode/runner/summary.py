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
    return {**_counts(records, requested, ok, errors, skipped, rewards, successes, clean),
            "successes_by_turn": dict(sorted(by_turn.items(), key=lambda kv: int(kv[0]))),
            "success_by_turn": _success_curve(ok),
            "by_category": _by_category(ok),
            "llm": _llm_totals(records.values()),
            "error_tasks": sorted(int(r["task"]) for r in errors),
            "skipped_tasks": {str(r["task"]): r.get("error") for r in
                              sorted(skipped, key=lambda r: int(r["task"]))}}


def _counts(records: dict[int, dict[str, Any]], requested: int, ok: list, errors: list,
            skipped: list, rewards: list[float], successes: list, clean: list) -> dict[str, Any]:
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
        "mean_turns": (sum(len(r.get("turns", [])) for r in ok) / len(ok)) if ok else None,
    }


def _success_curve(ok: list[dict[str, Any]]) -> dict[str, float]:
    """Share of episodes solved within n turns, for n = 1 .. the longest episode (the
    paper's success-versus-turns curve)."""
    if not ok:
        return {}
    longest = max((len(r.get("turns") or []) for r in ok), default=0)
    solved_at = [r["best_turn"] + 1 for r in ok
                 if r.get("success") and r.get("best_turn") is not None]
    return {str(n): sum(1 for t in solved_at if t <= n) / len(ok)
            for n in range(1, max(longest, 1) + 1)}


def _by_category(ok: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in ok:
        if r.get("category"):
            groups.setdefault(str(r["category"]), []).append(r)
    out = {}
    for name in sorted(groups):
        items = groups[name]
        won = sum(1 for r in items if r.get("success"))
        rewards = [float(r["reward"]) for r in items if r.get("reward") is not None]
        out[name] = {"episodes": len(items), "success": won, "success_rate": won / len(items),
                     "mean_reward": sum(rewards) / len(rewards) if rewards else None}
    return out


def _llm_totals(records: Any) -> dict[str, Any] | None:
    calls = [r["llm"] for r in records if isinstance(r.get("llm"), dict)]
    if not calls:
        return None
    total = {key: sum(c.get(key) or 0 for c in calls)
             for key in ("calls", "prompt_tokens", "completion_tokens", "latency_s")}
    total["mean_latency_s"] = total["latency_s"] / total["calls"] if total["calls"] else None
    return total


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
    if summary.get("mean_turns") is not None:
        lines.append(f"turns      mean {summary['mean_turns']:.2f}")
    for name, group in (summary.get("by_category") or {}).items():
        lines.append(f"  {name:12s} {group['success']}/{group['episodes']} "
                     f"({pct(group['success_rate'])})")
    llm = summary.get("llm")
    if llm:
        lines.append(f"model      {llm['calls']} calls, {llm['prompt_tokens']} prompt + "
                     f"{llm['completion_tokens']} completion tokens, "
                     f"{llm['latency_s']:.1f} s waiting")
    if summary.get("known_issues"):
        lines.append(f"known      {summary['known_issues']} tasks with known issues; success "
                     f"without them {pct(summary['success_rate_without_known_issues'])}")
    if summary["errors"]:
        lines.append(f"errors     tasks {summary['error_tasks'][:20]}")
    return "\n".join(lines)
