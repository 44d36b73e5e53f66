"""Spider's execution metric in both official settings, on recorded final queries.

Run by hand:  python perf/fidelity_spider_metric.py [FILE] [--backend mysql
              --mysql-url URL] [--json out.json]

FILE is an InterCode result file (default: the GPT-3.5 SQL file of the data mirror). For
each episode, its final query (the last recorded action that is not ``submit``) runs on a
pristine copy of the task's database; the script prints the share that passes
``exec_match`` (the official evaluator with ``--keep_distinct``) and
``exec_match_nodistinct`` (its default), and the tasks where the two settings disagree,
and the final queries that fail to run at all (with their errors), so a regression of
the ``db.table`` rewrite (``orchestra.Orchestra``) shows up as new failures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from intercode.agents.replay import load_trajectories
from intercode.envs.sql import SqlEnv
from intercode.fetch import data_file


def final_query(actions: list[str]) -> str | None:
    """The last action that is not a submit."""
    for text in reversed(actions):
        if text.strip() and not text.strip().lower().startswith("submit"):
            return text
    return None


def measure(path: Path, backend: str, url: str | None) -> dict:
    episodes = load_trajectories(path)
    env = SqlEnv("spider-dev", backend=backend, mysql_url=url)
    keep = nodistinct = 0
    differ: list[int] = []
    failed: dict[int, str] = {}
    try:
        for task, episode in sorted(episodes.items()):
            sql = final_query([a.text for a in episode.actions if a.valid])
            env.reset(options={"task": task})
            if sql is None:
                continue
            env.step(sql)
            last = env._last
            if last is not None and not last.ok:
                failed[task] = (last.error or "")[:120]
            reward = env.reward()
            a, b = reward.exec_match, env.exec_match_nodistinct(reward)
            keep += a
            nodistinct += b
            if a != b:
                differ.append(task)
    finally:
        env.close()
    n = len(episodes)
    return {"episodes": n, "exec_match": keep / n, "exec_match_nodistinct": nodistinct / n,
            "settings_differ": differ, "final_query_errors": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--backend", default="sqlite", choices=["sqlite", "mysql"])
    parser.add_argument("--mysql-url")
    parser.add_argument("--json")
    args = parser.parse_args()
    path = Path(args.file) if args.file else data_file("results_sql")
    report = measure(path, args.backend, args.mysql_url)
    print(f"{path.name} on {args.backend}: {report['episodes']} final queries; exec_match "
          f"(--keep_distinct) {100 * report['exec_match']:.1f}%, exec_match_nodistinct "
          f"(default) {100 * report['exec_match_nodistinct']:.1f}%; the settings differ on "
          f"{len(report['settings_differ'])}: {report['settings_differ']}")
    errors = report["final_query_errors"]
    print(f"final queries that fail to run: {len(errors)}")
    for task, error in errors.items():  # SQLite's name of the current database leaking
        if "main." in error:
            print(f"    {task}: {error}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
