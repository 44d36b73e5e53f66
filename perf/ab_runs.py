"""Two source trees' whole runs, before and after a change, in alternating order.

Run by hand (not a test):
    python perf/ab_runs.py --a OLD/src --b src [--runs 8] [--tasks 0,1] [--walkers-out]
                           [--env python --dataset mbpp --tasks all] [--workers N]

Each run is a fresh ``python -m intercode eval bash --dataset nl2bash --workers 2 --agent
gold`` (or with ``--env``, ``--dataset`` and ``--workers`` as given) with ``PYTHONPATH``
set to one tree (as ``bench_throughput.py`` runs them: start-up included, the CPU of the
whole process tree). The trees take turns, A B B A ..., so that the machine's drift (here
10-20 % within minutes) hits both alike. Reported per tree: the median wall time, the
median CPU, the median time to the first record (the start-up as a user sees it), the
time from the last record to the exit, the episodes per second between the first record
and the last (the steady rate), and episodes per second.

``--tasks 0,1`` measures the start-up (two episodes); ``--walkers-out`` runs every task but
the walkers (the NL2Bash throughput goal's tasks, found as ``bench_throughput.py`` finds
them: a first run of every gold with this checkout; then one run of each tree fills its
gold cache); ``--tasks all`` runs every task, after one run of each tree (which fills its
gold cache).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_throughput as bt
from common import emit


def one_run(src: str, tasks: str, target: tuple[str, str, int]) -> dict[str, float]:
    """One run of tree ``src`` (``target``: the environment, dataset and workers; ``tasks``
    "all": every task): wall, CPU, first record (seconds), episodes."""
    env = {**bt._env(), "PYTHONPATH": src}
    name, dataset, workers = target
    chosen = [] if tasks == "all" else ["--tasks", tasks]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "run" / "results.jsonl"
        errors = Path(tmp) / "stderr"
        cpu0, start = bt._children_cpu(), time.perf_counter()
        with errors.open("w") as err:
            proc = subprocess.Popen([sys.executable, "-m", "intercode", "eval", name,
                                     "--dataset", dataset, "--workers", str(workers), *chosen,
                                     "--agent", "gold", "--output", str(log.parent),
                                     "--no-progress"], env=env, stdout=subprocess.DEVNULL,
                                    stderr=err)
            first = last = None
            size = 0
            while proc.poll() is None:
                now_size = log.stat().st_size if log.exists() else 0
                if now_size != size:  # a record (or several) came in
                    size, last = now_size, time.perf_counter() - start
                    first = last if first is None else first
                time.sleep(0.002)
        wall = time.perf_counter() - start
        bt._reap_orphans()
        cpu = bt._children_cpu() - cpu0
        if proc.returncode != 0:
            raise SystemExit(f"the run of {src} failed:\n{errors.read_text()[-2000:]}")
        episodes = len(log.read_text().splitlines())
    first = first if first is not None else wall
    last = last if last is not None else wall
    return {"wall_s": wall, "cpu_s": cpu, "first_s": first,
            "exit_after_last_s": wall - last,
            "between_per_s": (episodes - 1) / (last - first) if last > first else 0.0,
            "episodes_per_s": episodes / wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="the tree before (its src folder)")
    parser.add_argument("--b", required=True, help="the tree after (its src folder)")
    parser.add_argument("--runs", type=int, default=8, help="runs of each tree")
    parser.add_argument("--tasks", default="0,1",
                        help="the runs' --tasks, or all (default: 0,1, the start-up)")
    parser.add_argument("--env", default="bash", help="the environment (bash)")
    parser.add_argument("--dataset", default="nl2bash", help="its dataset (nl2bash)")
    parser.add_argument("--workers", type=int, default=2, help="the runs' --workers (2)")
    parser.add_argument("--walkers-out", action="store_true",
                        help="every NL2Bash task but the walkers (overrides --tasks)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    bt._become_subreaper()
    tasks = args.tasks
    target = (args.env, args.dataset, args.workers)
    if args.walkers_out and target[:2] != ("bash", "nl2bash"):
        parser.error("--walkers-out is NL2Bash's (--env bash --dataset nl2bash)")
    walkers: list[int] = []
    if args.walkers_out:
        walkers, tasks = bt.without_walkers()  # (as bench_throughput.py's nl2bash part)
    if args.walkers_out or args.tasks == "all":
        for src in (args.a, args.b):  # fills the gold cache and writes the compiled modules
            one_run(src, tasks, target)
    runs: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
    for i in range(args.runs):
        for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
            runs[side].append(one_run(getattr(args, side), tasks, target))
    result: dict[str, Any] = {"target": {"env": args.env, "dataset": args.dataset,
                                         "workers": args.workers},
                              "tasks": f"all but the walkers {walkers}" if args.walkers_out
                              else tasks}
    for side, samples in runs.items():
        result[side] = {key: round(statistics.median(s[key] for s in samples), 3)
                        for key in samples[0]}
        result[side]["episodes_per_s_all"] = sorted(round(s["episodes_per_s"], 1)
                                                    for s in samples)
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
