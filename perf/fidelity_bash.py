"""Replay recorded InterCode Bash trajectories in both modes and compare with the records.

Run by hand:  python perf/fidelity_bash.py [FILE ...] [--fs 1,3,4] [--json out.json]
(needs the data: INTERCODE_DATA_MIRROR or a download). FILE: any recorded trajectory
file of upstream's (``ic_bash_multiturn_<model>_10_turns_fs_<n>.json``, any model); its
file system is read from its records (``dataset``) or its name. Without FILE, the
GPT-3.5 files of ``--fs``.

Each file's episodes are replayed twice, with intercode's persistent shell (the
default mode) and with ``--upstream-quirks`` (upstream's quote-stripping, stateless
exec, reset, image and containers that lived from episode to episode: see
intercode.envs.bash_upstream; on one worker, so that the episodes run in the file's
order in one environment, as upstream's loop ran them). Printed per file, per file
system and overall: the share of episodes whose best reward equals the recorded
``summary.max_reward`` (within 0.01) in each mode, the share of per-turn scores that
agree, and the success rates; then every episode either mode disagrees on, with a
cause:

  the known-issues file's         src/intercode/datasets/data/known_issues.json: its
                                  "_upstream" section (why upstream's record differs),
                                  else the task's known issue (kind: reason)
  upstream gold output truncated  the recorded gold output (``info.eval_obs``) is a
                                  strict suffix of the real one: upstream lost its start
  gold output differs             the recorded gold output is otherwise different
  quoting / stateless exec        the disagreement disappears with --upstream-quirks
  environment difference          anything else
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from intercode.datasets.issue_table import upstream_causes
from intercode.datasets.known_issues import known_issues
from intercode.fetch import data_file
from intercode.runner.run import execute, run_config

TOL = 0.011
FS_NAME = re.compile(r"fs_(\d)")


def replay(fs: str, path: Path, quirks: bool, folder: Path, workers: int) -> dict[int, dict]:
    out = folder / ("quirks" if quirks else "session")
    cfg = run_config(env="bash", dataset=f"nl2bash-fs{fs}", agent="replay", output=out,
                    trajectories=str(path), workers=workers, upstream_quirks=quirks)
    execute(cfg, progress=False)
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return {r["task"]: r for r in recs}


def gold_outputs(fs: str, folder: Path, workers: int) -> dict[int, str]:
    out = folder / "gold"
    execute(run_config(env="bash", dataset=f"nl2bash-fs{fs}", agent="gold", output=out,
                      workers=workers), progress=False)
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return {r["task"]: r["turns"][0]["observation"] for r in recs}


def agrees(ours: dict, ep: dict) -> bool:
    return bool(abs(ours["reward"] - ep["summary"]["max_reward"]) <= TOL)


def compare(recorded: dict, ours: dict[int, dict]) -> dict:
    same = turns = turn_same = 0
    for ep in recorded.values():
        mine = ours[ep["task_id"]]
        same += agrees(mine, ep)
        for theirs, got in zip(ep["turn_history"]["rewards"], mine["turns"], strict=False):
            turns += 1
            turn_same += got["reward"] is not None and abs(got["reward"] - theirs) <= TOL
    n = len(recorded)
    return {"episodes": n, "same": same, "max_reward_match": same / n, "turns": turns,
            "turn_same": turn_same, "turn_match": turn_same / max(turns, 1),
            "successes": sum(bool(r["success"]) for r in ours.values()),
            "success": sum(bool(r["success"]) for r in ours.values()) / n}


def cause(ep: dict, quirks: dict, gold: dict[int, str], listed: dict[int, str]) -> str:
    """Why an episode disagrees with its record (see the module docstring)."""
    task, best = ep["task_id"], ep["summary"]["max_reward"]
    if task in listed:
        return listed[task]
    theirs = (ep.get("info") or {}).get("eval_obs")
    real = gold[task]
    if theirs is not None and theirs != real and real.endswith(theirs):
        return "upstream gold output truncated"
    if theirs is not None and theirs != real:
        return "gold output differs"
    if abs(quirks[task]["reward"] - best) <= TOL:
        return "quoting / stateless exec"
    return "environment difference"


def listed_causes(fs: str) -> dict[int, str]:
    """The known-issues file's cause of each task of a file system that has one."""
    found = {t: f"{i.kind}: {i.reason}" for t, i in known_issues(f"nl2bash-fs{fs}").items()}
    found.update(upstream_causes(f"nl2bash-fs{fs}"))
    return found


def file_system(path: Path, recorded: dict) -> str:
    """The NL2Bash file system a recorded file was made on."""
    for ep in recorded.values():
        hit = FS_NAME.search(str(ep.get("dataset", "")))
        if hit:
            return hit.group(1)
    hit = FS_NAME.search(path.name)
    if hit is None:
        raise SystemExit(f"{path}: cannot tell its file system (no fs_<n> in it)")
    return hit.group(1)


def run_file(path: Path, workers: int) -> dict:
    recorded = json.loads(path.read_text())
    fs = file_system(path, recorded)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        session = replay(fs, path, False, folder, workers)
        # one worker: upstream's containers lived from episode to episode, and quirks
        # mode keeps that history in an environment (the file's order in one environment)
        quirks = replay(fs, path, True, folder, 1)
        gold = gold_outputs(fs, folder, workers)
    listed = listed_causes(fs)
    rows = []
    for ep in sorted(recorded.values(), key=lambda e: e["task_id"]):
        task = ep["task_id"]
        if agrees(session[task], ep) and agrees(quirks[task], ep):
            continue
        rows.append({"task": task, "recorded": ep["summary"]["max_reward"],
                     "default": session[task]["reward"], "quirks": quirks[task]["reward"],
                     "cause": cause(ep, quirks, gold, listed)})
    rec_success = sum(e["summary"]["max_reward"] == 1.0 for e in recorded.values())
    return {"file": str(path), "fs": fs, "recorded_successes": rec_success,
            "session": compare(recorded, session), "quirks": compare(recorded, quirks),
            "disagreeing": rows}


def line(name: str, s: dict, q: dict, rec_success: int) -> str:
    n = s["episodes"]
    return (f"{name}: {n} episodes; best reward as recorded: default {s['same']}/{n} "
            f"({100 * s['same'] / n:.1f}%), quirks {q['same']}/{n} ({100 * q['same'] / n:.1f}%);"
            f" per-turn scores as recorded: {100 * s['turn_same'] / max(s['turns'], 1):.1f}% /"
            f" {100 * q['turn_same'] / max(q['turns'], 1):.1f}%; successes {s['successes']} /"
            f" {q['successes']} (recorded {rec_success})")


def total(entries: list[dict], mode: str) -> dict:
    keys = ("episodes", "same", "turns", "turn_same", "successes")
    return {k: sum(e[mode][k] for e in entries) for k in keys}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="recorded trajectory files")
    parser.add_argument("--fs", default="1,3,4",
                        help="without FILE: the GPT-3.5 files of these file systems")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    files = args.files or [data_file(f"results_bash_fs_{fs}") for fs in args.fs.split(",")]
    entries = []
    for path in files:
        entry = run_file(path, args.workers)
        entries.append(entry)
        print(line(f"{path.name} (fs{entry['fs']})", entry["session"], entry["quirks"],
                   entry["recorded_successes"]))
        for row in entry["disagreeing"]:
            print(f"    fs{entry['fs']}#{row['task']:<3d} recorded {row['recorded']:.2f} "
                  f"default {row['default']:.2f} quirks {row['quirks']:.2f}  {row['cause']}")
    by_fs: dict[str, list[dict]] = {}
    for entry in entries:
        by_fs.setdefault(entry["fs"], []).append(entry)
    print()
    for fs, group in sorted(by_fs.items()):
        print(line(f"fs{fs}", total(group, "session"), total(group, "quirks"),
                   sum(e["recorded_successes"] for e in group)))
    print(line("overall", total(entries, "session"), total(entries, "quirks"),
               sum(e["recorded_successes"] for e in entries)))
    if args.json:
        Path(args.json).write_text(json.dumps(entries, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
