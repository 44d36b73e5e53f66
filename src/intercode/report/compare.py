"""Two runs of the same tasks, compared task by task (``intercode compare``).

The tasks both runs asked for are paired. As in the headline summary, a task without a
record, or whose episode ended in an error, is a failure with reward 0; a task skipped
in either run (it cannot run there) is left out of the pairs and counted. For the pairs,
overall and by category: the success of A and B, the difference B - A with a bootstrap
percentile interval (tasks resampled with replacement), the same for the mean reward,
the wins (B solved, A did not), losses and ties, and the exact McNemar test of the
discordant pairs. The result is plain JSON data, printed by ``compare_view`` and drawn
by the HTML report.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from intercode.errors import ConfigError
from intercode.report.runs import Run
from intercode.report.stats import bootstrap_means, mcnemar_exact, percentile_interval

__all__ = ["compare_runs"]


def compare_runs(a: Run, b: Run, *, resamples: int = 10000, seed: int = 0,
                 confidence: float = 0.95) -> dict[str, Any]:
    """Compare run ``b`` with run ``a`` over the tasks both requested (see the module).

    Runs of different environments or datasets, an empty run, or runs without a task
    in common are refused with a one-line :class:`ConfigError`.

    The result: ``env``, ``dataset``; ``a`` and ``b`` (``label``, ``path``, ``kind``,
    ``agent``, ``requested``, ``records``, and the ``errors`` and ``missing`` records
    among the pairs, counted as failures, and the run's ``notes``); ``tasks`` (``paired``,
    ``only_a``, ``only_b``, ``skipped_a``, ``skipped_b``, ``skipped``, ``uncategorised``);
    ``settings``; ``overall`` and ``by_category[name]``, each with ``n``, ``a`` and ``b``
    (``success``, ``success_rate``, ``mean_reward``), ``difference`` (of the success
    rates, B - A) and ``difference_ci``, ``reward_difference`` and
    ``reward_difference_ci``, ``wins``, ``losses``, ``ties`` (``both``, ``neither``),
    ``mcnemar_p`` and ``mcnemar_log10_p``; ``wins`` and ``losses`` (the task ids); and
    ``notes`` (sentences on what was left out or counted as a failure).
    """
    if resamples < 1:
        raise ConfigError(f"resamples must be at least 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be between 0 and 1, got {confidence}")
    _check_comparable(a, b)
    common = set(a.requested) & set(b.requested)
    if not common:
        raise ConfigError(f"A ({a.label}) and B ({b.label}) have no task in common "
                          f"({len(a.requested)} and {len(b.requested)} tasks requested)")
    skipped_a = {t for t in common if _status(a, t) == "skipped"}
    skipped_b = {t for t in common if _status(b, t) == "skipped"}
    paired = sorted(common - skipped_a - skipped_b)
    if not paired:
        raise ConfigError(f"every task A ({a.label}) and B ({b.label}) have in common was "
                          "skipped in one of them: nothing to compare")
    outcomes = {t: (_outcome(a.records.get(t)), _outcome(b.records.get(t))) for t in paired}
    categories: dict[str, list[int]] = {}
    for t in paired:
        name = _category(a.records.get(t), b.records.get(t))
        if name is not None:
            categories.setdefault(name, []).append(t)
    settings = {"resamples": resamples, "seed": seed, "confidence": confidence}

    def group(tasks: list[int]) -> dict[str, Any]:
        return _group(tasks, outcomes, resamples=resamples, seed=seed, confidence=confidence)

    counts = {"paired": len(paired), "only_a": len(set(a.requested) - common),
              "only_b": len(set(b.requested) - common), "skipped_a": len(skipped_a),
              "skipped_b": len(skipped_b), "skipped": len(skipped_a | skipped_b),
              "uncategorised": len(paired) - sum(len(ts) for ts in categories.values())}
    sides = {"a": _describe(a, paired), "b": _describe(b, paired)}
    return {
        "env": a.env, "dataset": a.dataset, **sides,
        "tasks": counts, "settings": settings,
        "overall": group(paired),
        "by_category": {name: group(categories[name]) for name in sorted(categories)},
        "wins": [t for t in paired if outcomes[t][1][0] and not outcomes[t][0][0]],
        "losses": [t for t in paired if outcomes[t][0][0] and not outcomes[t][1][0]],
        "notes": _notes(a, b, counts, sides),
    }


def _check_comparable(a: Run, b: Run) -> None:
    for which, run in (("A", a), ("B", b)):
        if not run.records:
            raise ConfigError(f"{which} ({run.path}) has no episode records: nothing to "
                              "compare")
    if a.env != b.env:
        raise ConfigError(f"cannot compare runs of different environments: A ({a.label}) "
                          f"ran {a.env}, B ({b.label}) ran {b.env}")
    if a.dataset != b.dataset:
        raise ConfigError(f"cannot compare runs of different datasets: A ({a.label}) ran "
                          f"{a.dataset}, B ({b.label}) ran {b.dataset}")


def _status(run: Run, task: int) -> str | None:
    rec = run.records.get(task)
    return None if rec is None else str(rec.get("status"))


def _outcome(rec: dict[str, Any] | None) -> tuple[bool, float]:
    """Success and reward; a missing record or an error is a failure with reward 0."""
    if rec is None or rec.get("status") != "ok":
        return False, 0.0
    reward = rec.get("reward")
    return bool(rec.get("success")), float(reward) if reward is not None else 0.0


def _category(rec_a: dict[str, Any] | None, rec_b: dict[str, Any] | None) -> str | None:
    for rec in (rec_a, rec_b):
        if rec is not None and rec.get("category"):
            return str(rec["category"])
    return None


Outcomes = dict[int, tuple[tuple[bool, float], tuple[bool, float]]]


def _group(tasks: list[int], outcomes: Outcomes, *, resamples: int, seed: int,
           confidence: float) -> dict[str, Any]:
    """The comparison over some of the paired tasks."""
    rows = np.array([[sa, sb, ra, rb] for (sa, ra), (sb, rb) in
                     (outcomes[t] for t in tasks)], dtype=float).reshape(-1, 4)
    success_a, success_b, reward_a, reward_b = rows.T
    n = len(tasks)
    wins = int(np.sum((success_b == 1) & (success_a == 0)))
    losses = int(np.sum((success_a == 1) & (success_b == 0)))
    both = int(np.sum((success_a == 1) & (success_b == 1)))
    means = bootstrap_means(np.stack([success_b - success_a, reward_b - reward_a]),
                            resamples, seed)
    test = mcnemar_exact(wins, losses)
    return {
        "n": n,
        "a": _side(success_a, reward_a), "b": _side(success_b, reward_b),
        "difference": (int(success_b.sum()) - int(success_a.sum())) / n,
        "difference_ci": list(percentile_interval(means[0], confidence)),
        "reward_difference": float(np.mean(reward_b - reward_a)),
        "reward_difference_ci": list(percentile_interval(means[1], confidence)),
        "wins": wins, "losses": losses,
        "ties": {"both": both, "neither": n - wins - losses - both},
        "mcnemar_p": test.p, "mcnemar_log10_p": test.log10_p,
    }


def _side(success: np.ndarray[Any, Any], reward: np.ndarray[Any, Any]) -> dict[str, Any]:
    solved = int(success.sum())
    return {"success": solved, "success_rate": solved / len(success),
            "mean_reward": float(reward.mean())}


def _describe(run: Run, paired: list[int]) -> dict[str, Any]:
    errors = sum(1 for t in paired if _status(run, t) == "error")
    missing = sum(1 for t in paired if t not in run.records)
    return {"label": run.label, "path": str(run.path), "kind": run.kind, "agent": run.agent,
            "requested": len(run.requested), "records": len(run.records),
            "errors": errors, "missing": missing, "notes": list(run.notes)}


def _notes(a: Run, b: Run, counts: dict[str, int],
           sides: dict[str, dict[str, Any]]) -> list[str]:
    notes = []
    for which, run, only in (("A", a, counts["only_a"]), ("B", b, counts["only_b"])):
        if only:
            other = "B" if which == "A" else "A"
            notes.append(f"{only} task(s) requested by {which} ({run.label}) are not in "
                         f"{other} and were left out")
    if counts["skipped"]:
        notes.append(f"{counts['skipped']} task(s) skipped in A ({counts['skipped_a']}) or "
                     f"B ({counts['skipped_b']}) were left out (they cannot run there)")
    for which, run in (("A", a), ("B", b)):
        side = sides[which.lower()]
        if side["errors"] or side["missing"]:
            notes.append(f"{which}: {side['errors']} error(s) and {side['missing']} task(s) "
                         "without a record count as failures")
        notes.extend(f"{which}: {note}" for note in run.notes)
    if counts["uncategorised"] and counts["uncategorised"] < counts["paired"]:
        notes.append(f"{counts['uncategorised']} task(s) have no category and are only in "
                     "the overall numbers")
    return notes
