"""Replay InterCode's recorded GPT-3.5 SQL trajectories and compare with the records.

Run by hand:  python perf/fidelity_sql.py [--mysql-url URL] [--json out.json]

For each backend (SQLite, and the server if a URL is given): the share of the 1034
episodes whose best reward equals the recorded ``summary.max_reward`` (within 0.01),
the share of per-turn scores that agree, success rates, and for each disagreeing
episode a probable cause:

  known issue              the task is in the known-issue list (ties, broken golds)
  same answer, other gold  at the recorded best turn the agent's result is the one
                           recorded, yet it scores differently: the gold's result
                           differs (row order of GROUP BY / DISTINCT / set operations
                           without ORDER BY, which is engine-specific)
  agent result differs     the agent's result differs: engine behaviour (types, order,
                           errors), or state that an earlier episode left upstream
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from intercode.datasets.known_issues import known_issues
from intercode.fetch import data_file
from intercode.runner.run import execute, run_config

TOL = 0.011


def run(agent: str, backend: str, url: str | None, folder: Path, trajectories: str | None):
    out = folder / f"{agent}-{backend}"
    execute(run_config(env="sql", dataset="spider-dev", agent=agent, output=out, workers=2,
                      trajectories=trajectories, sql_backend=backend, mysql_url=url),
            progress=False)
    return {r["task"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def compare(recorded: dict, ours: dict, known: dict) -> dict:
    same = turns = turn_same = 0
    causes: dict[str, list[int]] = {"known issue": [], "same answer, other gold": [],
                                    "agent result differs": []}
    for ep in recorded.values():
        task = ep["task_id"]
        mine = ours[task]
        best = ep["summary"]["max_reward"]
        for theirs, got in zip(ep["turn_history"]["rewards"], mine["turns"], strict=False):
            turns += 1
            turn_same += got["reward"] is not None and abs(got["reward"] - theirs) <= TOL
        if abs(mine["reward"] - best) <= TOL:
            same += 1
        elif task in known:
            causes["known issue"].append(task)
        else:
            i = ep["summary"]["max_reward_idx"]
            theirs = ep["turn_history"]["observations"][i]
            got = mine["turns"][i]["observation"] if i < len(mine["turns"]) else None
            key = "same answer, other gold" if got == theirs else "agent result differs"
            causes[key].append(task)
    n = len(recorded)
    return {"episodes": n, "max_reward_match": same / n, "turn_match": turn_same / turns,
            "success": sum(bool(r["success"]) for r in ours.values()) / n, "causes": causes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mysql-url")
    parser.add_argument("--json")
    args = parser.parse_args()
    path = data_file("results_sql")
    recorded = json.loads(path.read_text())
    rec_success = sum(e["summary"]["max_reward"] == 1.0 for e in recorded.values()) / 1034
    known = known_issues("spider-dev")
    report = {"recorded_success": rec_success}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ["sqlite"] + (["mysql"] if args.mysql_url else []):
            ours = run("replay", backend, args.mysql_url, Path(tmp), str(path))
            entry = compare(recorded, ours, known)
            report[backend] = entry
            print(f"{backend}: best reward as recorded {100 * entry['max_reward_match']:.1f}%, "
                  f"per-turn {100 * entry['turn_match']:.1f}%, success "
                  f"{100 * entry['success']:.1f}% (recorded {100 * rec_success:.1f}%)")
            for cause, tasks in entry["causes"].items():
                print(f"    {cause:22s} {len(tasks):3d}  {tasks}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
