"""Gold validation: run every gold solution as the agent and explain what does not score 1.0.

Each task ends in one of these groups:

* ``ok``: the gold scores 1.0 and the task has no known issue;
* ``ok_known``: it scores 1.0 but is listed as a known issue (a gold that fails to run
  but matches itself, an output that depends on the host, ...);
* ``fail_known``: it does not score 1.0 and the known-issue list says why (a broken
  gold that fails to run: the episode is an error, as it cannot be scored);
* ``unexpected``: it does not score 1.0 and nothing explains it; or the known-issue
  list says it fails but it scored 1.0. Both must be empty.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from intercode.benchmarks import get
from intercode.datasets import Dataset, load_dataset
from intercode.datasets.known_issues import known_issues
from intercode.envs.factory import make_env
from intercode.envs.settings import EnvSettings
from intercode.runner.logs import ResultsLog, latest_by_task
from intercode.runner.run import RunConfig, execute
from intercode.sandbox.limits import Limits

__all__ = ["format_report", "validate"]


def validate(env: str, dataset: str, workers: int = 2, limits: Limits | None = None,
             output: Path | None = None, tasks: tuple[int, ...] | None = None,
             progress: bool = True, sql_backend: str = "sqlite",
             mysql_url: str | None = None, network: bool | str = False,
             settings: EnvSettings | None = None, baseline: bool = False) -> dict[str, Any]:
    """Run the gold agent on ``dataset`` and classify every task (``settings``, if given,
    replaces ``limits``, ``sql_backend``, ``mysql_url`` and ``network``). With
    ``baseline``, also what doing nothing earns on each task under the paper's reward
    (``noop_rewards``: the untouched starting state handed in at once)."""
    ds = load_dataset(dataset, env)
    with tempfile.TemporaryDirectory(prefix="intercode-validate-") as tmp:
        folder = output or Path(tmp) / "run"
        cfg = RunConfig(env=env, dataset=dataset, agent="gold", output=folder, workers=workers,
                        tasks=tasks, resume=output is not None,
                        settings=settings or EnvSettings(
                            limits=limits or Limits(), sql_backend=sql_backend,
                            mysql_url=mysql_url, network=network))
        execute(cfg, progress=progress)
        records = latest_by_task(ResultsLog(folder / "results.jsonl").read())
        report = classify(env, ds, records, known_issues(dataset, env))
        if get(env).extra.get("validate_noop") or baseline:
            noop = dataclasses.replace(cfg, agent="noop", output=folder.parent / "noop",
                                       resume=output is not None,
                                       settings=dataclasses.replace(cfg.settings,
                                                                    reward="paper"))
            execute(noop, progress=progress)
            undone = latest_by_task(ResultsLog(noop.output / "results.jsonl").read())
            check_noop(report, ds, undone)
    return report


def check_noop(report: dict[str, Any], ds: Dataset,
               records: dict[int, dict[str, Any]]) -> None:
    """Add to ``report`` how the untouched state scored: a task it solves is unexpected
    (an empty patch must not resolve a SWE task)."""
    report["noop_scored_one"] = []
    report["noop_rewards"] = {}
    for index in sorted(records):
        rec = records[index]
        if rec.get("status") == "ok":
            report["noop_rewards"][index] = float(rec.get("reward") or 0.0)
        if rec.get("status") == "ok" and rec.get("success"):
            task = ds[index]
            report["noop_scored_one"].append(index)
            report["unexpected"].append({"task": index, "source": task.source,
                                         "source_index": task.source_index, "gold": task.gold,
                                         "why": "handing in the untouched state scores 1.0"})
    report["noop_checked"] = len(records)


def validate_dataset(dataset: Dataset, limits: Limits | None = None,
                     tasks: tuple[int, ...] | None = None, **env_options: Any) -> dict[str, Any]:
    """Run the gold agent on a loaded dataset (e.g. a user dataset) in this process.

    The same report as :func:`validate` (without known issues), one task after the
    other in one environment; ``env_options`` are :class:`EnvSettings` fields
    (``sql_backend``, ``mysql_url``, ``network``, ``upstream_quirks``). :func:`validate`
    runs workers and takes a dataset name or file; this takes a :class:`Dataset` itself.
    """
    from intercode.agents.gold import GoldPolicy
    from intercode.runner.episode import run_episode

    env = make_env(dataset.env, dataset, EnvSettings(limits=limits or Limits(), **env_options))
    records: dict[int, dict[str, Any]] = {}
    try:
        for index in tasks if tasks is not None else range(len(dataset)):
            records[index] = run_episode(env, index, GoldPolicy(dataset.env)).to_json()
    finally:
        env.close()
    return classify(dataset.env, dataset, records, {})




def classify(env: str, ds: Dataset, records: dict[int, dict[str, Any]],
             known: dict[int, Any]) -> dict[str, Any]:
    """The validation report of the gold runs' records (by task index)."""
    report: dict[str, Any] = {"env": env, "dataset": ds.name, "tasks": 0, "scored_one": 0,
                              "ok": [], "ok_known": [], "fail_known": [], "unexpected": [],
                              "skipped": [], "errors": []}
    for index in sorted(records):
        rec = records[index]
        task = ds[index]
        report["tasks"] += 1
        entry: dict[str, Any] = {"task": index, "source": task.source,
                                 "source_index": task.source_index, "gold": task.gold}
        if rec.get("status") == "skipped":
            report["skipped"].append({**entry, "why": rec.get("error")})
            continue
        issue = known.get(index)
        if rec.get("status") != "ok" and issue is not None and _broken_gold_failed(rec, issue):
            report["fail_known"].append({**entry, "kind": issue.kind, "reason": issue.reason,
                                         "explanation": f"error: {rec.get('error')}"})
            continue
        if rec.get("status") != "ok":
            report["errors"].append({**entry, "error": rec.get("error")})
            report["unexpected"].append({**entry, "why": f"error: {rec.get('error')}"})
            continue
        success = bool(rec.get("success"))
        report["scored_one"] += success
        entry.update(reward=rec.get("reward"), explanation=explain(rec))
        if issue is not None:
            entry.update(kind=issue.kind, reason=issue.reason)
        if issue is None:
            if success:
                report["ok"].append(index)
            else:
                report["unexpected"].append({**entry, "why": entry["explanation"]})
        elif success:
            report["ok_known"].append(entry)
            if issue.gold_scores_one is False:
                report["unexpected"].append({**entry, "why": "listed as failing, scored 1.0"})
        else:
            report["fail_known"].append(entry)
            if issue.gold_scores_one is True:
                report["unexpected"].append({**entry, "why": "listed as scoring 1.0, did not: "
                                             + entry["explanation"]})
    return report


def _broken_gold_failed(record: dict[str, Any], issue: Any) -> bool:
    """Whether an episode's error is its gold failing, on a task listed with a broken gold
    (a gold that fails cannot score the episode: a ``RewardError``, never "no rows")."""
    return (issue.kind == "broken_gold" and not issue.gold_scores_one
            and "the gold query failed" in str(record.get("error") or ""))


def explain(record: dict[str, Any]) -> str:
    """What an episode's record says about its gold run."""
    turns = record.get("turns") or []
    info = record.get("reward_info") or {}
    notes = []
    if turns and turns[0].get("timed_out"):
        notes.append("the gold timed out")
    code = turns[0].get("exit_code") if turns else None
    if code not in (0, None):
        notes.append(f"the gold exits with status {code}")
    parts = info.get("reward_parts") or {}
    if parts.get("file_diff", 0.33) < 0.33:
        notes.append(f"file changes differ between two runs: missing {info.get('diff_miss')}, "
                     f"extra {info.get('diff_extra')}")
    if parts.get("file_changes", 0.33) < 0.33:
        notes.append("changed file contents differ between two runs")
    if parts.get("answer_similarity", 0.33) < 0.33:
        notes.append(f"output differs between two runs (similarity {info.get('similarity'):.3f})")
    if not notes and record.get("reward") not in (1, 1.0, None):
        # no bash-style part explains it: show what the reward function recorded
        shown = json.dumps(info, sort_keys=True, default=str)
        notes.append(f"reward {record.get('reward')}: {shown[:600]}")
    return "; ".join(notes) or "scores 1.0"


def format_report(report: dict[str, Any]) -> str:
    """Human-readable validation report."""
    ran = report["tasks"] - len(report["skipped"])
    lines = [f"{report['dataset']}: {report['scored_one']}/{ran} gold solutions score 1.0"]
    if "noop_checked" in report:
        lines.append(f"{len(report['noop_scored_one'])}/{report['noop_checked']} untouched "
                     "starting states score 1.0 (must be 0)")
        floors = report["noop_rewards"]
        if floors:
            values = list(floors.values())
            mean = sum(values) / len(values)
            lines.append(f"doing nothing (submit at once) earns: mean {mean:.3f}, "
                         f"min {min(values):.3f}, max {max(values):.3f} over {len(values)} tasks")
            lines.append("  per task: " + ", ".join(f"{i}: {v:.3f}" for i, v in
                                                    sorted(floors.items())))
    if report["skipped"]:
        lines.append(f"\nskipped ({len(report['skipped'])}):")
        for e in report["skipped"]:
            lines.append(f"  {e['task']:4d} {e['why']}")
    for title, key in (("known issues that still score 1.0", "ok_known"),
                       ("known issues that do not score 1.0", "fail_known")):
        if report[key]:
            lines.append(f"\n{title}:")
            for e in report[key]:
                lines.append(f"  {e['task']:4d} {e['source']}#{e['source_index']} [{e['kind']}] "
                             f"{e['reason']}")
    if report["unexpected"]:
        lines.append("\nUNEXPECTED (fix the environment or the known-issue list):")
        for e in report["unexpected"]:
            lines.append(f"  {e['task']:4d} {e['source']}#{e['source_index']}: {e['why']}")
            lines.append(f"       gold: {e['gold']}")
    else:
        lines.append("\nno unexpected results")
    return "\n".join(lines)
