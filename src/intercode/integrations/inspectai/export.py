"""``intercode export inspect RUN -o FILE.eval``: an intercode run as an Inspect log.

The log reads in ``inspect view`` as a native run of the same episodes does: the run's
start and end, the tokens it used, and per episode a sample
(:mod:`~intercode.integrations.inspectai.export_sample`) with the task's gold as its
target. The score is the episode's reward (``intercode_scorer``, as the Inspect tasks
score), with success, the reward parts and the 1-based best turn as metadata; an episode
that failed is a sample error.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import ModelUsage

from intercode.datasets import Dataset, load_dataset
from intercode.datasets.registry import dataset_env
from intercode.errors import IntercodeError
from intercode.integrations.inspectai.export_sample import SCORER, Episode, instant, sample
from intercode.report.runs import Run, load_run

__all__ = ["export_run", "to_eval_log"]


def _dataset(run: Run) -> Dataset | None:
    """The run's dataset when it is a registered one that loads here (a run folder may name
    any file: only registered datasets are read, for the targets)."""
    try:
        return load_dataset(run.dataset) if dataset_env(run.dataset) is not None else None
    except (IntercodeError, OSError, ValueError):
        return None


def _target(dataset: Dataset | None, task: int, record: dict[str, Any]) -> str:
    """The task's gold, when the dataset's task is the record's (same query)."""
    if dataset is None or not 0 <= task < len(dataset):
        return ""
    entry = dataset[task]
    return str(entry.gold) if entry.query == record.get("query") else ""


def _total(samples: list[EvalSample]) -> dict[str, ModelUsage]:
    total: dict[str, ModelUsage] = {}
    for s in samples:
        for model, used in s.model_usage.items():
            total[model] = total[model] + used if model in total else used
    return total


def to_eval_log(run: Run) -> EvalLog:
    """The whole run as an Inspect log."""
    model = run.config.get("model")
    name = model.get("model") if isinstance(model, dict) else None
    model_name = str(name or f"intercode/{run.agent}")
    created = instant(run.config.get("created_at"))
    starts = [t for t in (instant(r.get("started_at")) for r in run.records.values()) if t]
    first = min([*starts, *([created] if created else [])], default=None) or dt.datetime.now(
        dt.UTC)
    dataset = _dataset(run)
    samples = [sample(Episode(run, t, r, model_name, _target(dataset, t, r), first))
               for t, r in sorted(run.records.items())]
    scored = [s for s in samples if s.scores]
    rewards = [float(s.scores[SCORER].as_float()) for s in scored if s.scores]
    solved = [bool((s.scores[SCORER].metadata or {}).get("success")) for s in scored
              if s.scores]
    results = EvalResults(total_samples=len(samples), completed_samples=len(scored),
                          scores=[EvalScore(name=SCORER, scorer=SCORER,
                                            scored_samples=len(scored),
                                            unscored_samples=len(samples) - len(scored),
                                            metrics={
        "mean": EvalMetric(name="mean", value=sum(rewards) / len(rewards) if rewards else 0.0),
        "success": EvalMetric(name="success",
                              value=sum(solved) / len(solved) if solved else 0.0)})])
    ends = [instant(s.completed_at) for s in samples if s.completed_at]
    last = max([e for e in ends if e], default=first)
    stats = EvalStats(started_at=first.isoformat(), completed_at=last.isoformat(),
                      model_usage=_total(samples))
    spec = EvalSpec(created=first.isoformat(), task=f"intercode/{run.env}",
                    dataset=EvalDataset(name=run.dataset, samples=len(samples),
                                        sample_ids=[s.id for s in samples]),
                    model=model_name, config=EvalConfig(),
                    metadata={"intercode_run": str(run.path), "agent": run.agent,
                              "notes": list(run.notes)})
    return EvalLog(eval=spec, status="success", results=results, stats=stats,
                   samples=samples)


def export_run(run_path: str | Path, output: str | Path) -> Path:
    """Write the run at ``run_path`` as an Inspect log (``.eval`` or ``.json``)."""
    log = to_eval_log(load_run(run_path))
    output = Path(output)
    write_eval_log(log, str(output), format="json" if output.suffix == ".json" else "eval")
    return output
