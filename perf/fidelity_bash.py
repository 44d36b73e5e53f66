"""Replay InterCode's recorded GPT-3.5 Bash trajectories and compare with the records.

Run by hand:  python perf/fidelity_bash.py [--fs 1,3,4] [--json out.json]
(needs the data: INTERCODE_DATA_MIRROR or a download).

For each recorded file it replays every episode twice, with intercode's persistent
shell and with ``--upstream-quirks`` (upstream's quote-stripping, stateless exec), and
reports: the share of episodes whose best reward equals the recorded
``summary.max_reward`` (within 0.01), the share of per-turn scores that agree, and the
success rates. Each disagreeing episode gets a probable cause:

  upstream gold output truncated   the recorded gold output (``info.eval_obs``) is a
                                   strict suffix of the real one: upstream lost its start
  gold output differs              the recorded gold output is otherwise different: the
                                   host differs (owner, sizes, /var/log, network) or
                                   upstream recorded another command's output
  quoting / stateless exec         the disagreement disappears with --upstream-quirks
  environment difference           anything else (agent-side: /tmp, owner, sizes, ...)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from intercode.fetch import data_file
from intercode.runner.run import execute, run_config

TOL = 0.011


def replay(fs: str, path: Path, quirks: bool, folder: Path) -> dict[int, dict]:
    out = folder / ("quirks" if quirks else "session")
    cfg = run_config(env="bash", dataset=f"nl2bash-fs{fs}", agent="replay", output=out,
                    trajectories=str(path), workers=2, upstream_quirks=quirks)
    execute(cfg, progress=False)
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return {r["task"]: r for r in recs}


def gold_outputs(fs: str, folder: Path) -> dict[int, str]:
    out = folder / "gold"
    execute(run_config(env="bash", dataset=f"nl2bash-fs{fs}", agent="gold", output=out,
                      workers=2), progress=False)
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return {r["task"]: r["turns"][0]["observation"] for r in recs}


def compare(recorded: dict, ours: dict[int, dict]) -> dict:
    same = turns = turn_same = 0
    for ep in recorded.values():
        mine = ours[ep["task_id"]]
        same += abs(mine["reward"] - ep["summary"]["max_reward"]) <= TOL
        for theirs, got in zip(ep["turn_history"]["rewards"], mine["turns"], strict=False):
            turns += 1
            turn_same += got["reward"] is not None and abs(got["reward"] - theirs) <= TOL
    n = len(recorded)
    return {"episodes": n, "max_reward_match": same / n, "turn_match": turn_same / turns,
            "success": sum(bool(r["success"]) for r in ours.values()) / n}


def causes(recorded: dict, session: dict, quirks: dict, gold: dict[int, str]) -> dict[str, list]:
    found: dict[str, list] = {"upstream gold output truncated": [], "gold output differs": [],
                              "quoting / stateless exec": [], "environment difference": []}
    for ep in recorded.values():
        task, best = ep["task_id"], ep["summary"]["max_reward"]
        if abs(session[task]["reward"] - best) <= TOL:
            continue
        theirs = (ep.get("info") or {}).get("eval_obs")
        real = gold[task]
        if theirs is not None and theirs != real and real.endswith(theirs):
            found["upstream gold output truncated"].append(task)
        elif theirs is not None and theirs != real:
            found["gold output differs"].append(task)
        elif abs(quirks[task]["reward"] - best) <= TOL:
            found["quoting / stateless exec"].append(task)
        else:
            found["environment difference"].append(task)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fs", default="1,3,4")
    parser.add_argument("--json")
    args = parser.parse_args()
    report = {}
    for fs in args.fs.split(","):
        path = data_file(f"results_bash_fs_{fs}")
        recorded = json.loads(path.read_text())
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            session = replay(fs, path, False, folder)
            quirks = replay(fs, path, True, folder)
            gold = gold_outputs(fs, folder)
        rec_success = sum(e["summary"]["max_reward"] == 1.0 for e in recorded.values())
        entry = {"recorded_success": rec_success / len(recorded),
                 "session": compare(recorded, session), "quirks": compare(recorded, quirks),
                 "causes": causes(recorded, session, quirks, gold)}
        report[f"fs{fs}"] = entry
        s, q = entry["session"], entry["quirks"]
        print(f"fs{fs}: {s['episodes']} episodes; best reward as recorded: "
              f"{100 * s['max_reward_match']:.1f}% (quirks {100 * q['max_reward_match']:.1f}%); "
              f"per-turn scores as recorded: {100 * s['turn_match']:.1f}% "
              f"(quirks {100 * q['turn_match']:.1f}%); success {100 * s['success']:.1f}% "
              f"(quirks {100 * q['success']:.1f}%, "
              f"recorded {100 * entry['recorded_success']:.1f}%)")
        for cause, tasks in entry["causes"].items():
            print(f"    {cause:32s} {len(tasks):3d}  {tasks}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
