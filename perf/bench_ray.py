"""The Ray executor against the local one: overhead per episode, episodes/s, memory.

Run by hand:  python perf/bench_ray.py [--episodes 40] [--actors 1,2,4] [--json out.json]

Gold episodes of nl2bash (the same tasks for both executors), on a local Ray instance
started here with as many CPUs as the most actors measured.

- **overhead per episode**: one worker/actor, episodes one after another. From the
  first record to the last, the wall time minus the time the episodes themselves took
  (each record's ``duration_s``, measured inside the worker) is what the executor adds:
  sending the task, returning the record, the driver's bookkeeping. Ray's figure minus
  the local one is what Ray adds.
- **episodes/s** for 1, 2 and 4 actors (and as many local workers), from the first
  record to the last (start-up excluded: environments are warm in both).
- **memory per actor**: resident memory (RSS and USS) of each actor process, and of its
  sandbox processes, after the run's episodes, against a local worker process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

DATASET = "nl2bash"


def timed(executor: Any, tasks: list[int]) -> dict[str, float]:
    """Run ``tasks``; the wall time from the first record to the last, and the episodes'
    own time after the first."""
    stamps: list[float] = []
    inner: list[float] = []

    def on_record(rec: dict[str, Any]) -> None:
        stamps.append(time.perf_counter())
        inner.append(float(rec.get("duration_s") or 0.0))
        if rec.get("status") != "ok":
            raise SystemExit(f"task {rec['task']}: {rec.get('error')}")

    executor.run(tasks, on_record)
    span = stamps[-1] - stamps[0]
    return {"episodes": len(stamps) - 1, "span_s": span, "inside_s": sum(inner[1:])}


def memory_of(pids: list[int]) -> dict[str, float]:
    """Mean RSS/USS (MB) of the processes and the sum over their children (sandboxes)."""
    import psutil

    own_rss, own_uss, kids_rss = [], [], []
    for pid in pids:
        proc = psutil.Process(pid)
        info = proc.memory_full_info()
        own_rss.append(info.rss)
        own_uss.append(info.uss)
        kids_rss.append(sum(c.memory_info().rss for c in proc.children(recursive=True)))
    mb = 1024 * 1024
    return {"rss_mb": round(sum(own_rss) / len(pids) / mb, 1),
            "uss_mb": round(sum(own_uss) / len(pids) / mb, 1),
            "sandbox_rss_mb": round(sum(kids_rss) / len(pids) / mb, 1)}


def run_local(workers: int, tasks: list[int], probe: bool = False) -> dict[str, Any]:
    from intercode.runner.executors import LocalExecutor
    from intercode.runner.worker import WorkerSpec

    executor = LocalExecutor(WorkerSpec(env="bash", dataset=DATASET, agent="gold"), workers)
    memory: dict[str, float] = {}
    if probe:
        original = executor._dispatch

        def dispatch(worker: Any, queue: list[int]) -> None:
            if len(queue) == len(tasks) // 2 and not memory:
                memory.update(memory_of([w.proc.pid for w in executor._pool
                                         if w.proc.pid is not None]))
            original(worker, queue)

        executor._dispatch = dispatch  # type: ignore[method-assign]
    out: dict[str, Any] = timed(executor, tasks)
    return {**out, **({"memory": memory} if probe else {})}


def run_ray(workers: int, tasks: list[int], probe: bool = False) -> dict[str, Any]:
    from intercode.integrations.raycluster.executor import RayExecutor
    from intercode.runner.worker import WorkerSpec

    executor = RayExecutor(WorkerSpec(env="bash", dataset=DATASET, agent="gold"), workers)
    memory: dict[str, float] = {}
    if probe:
        original = executor._dispatch

        def dispatch(state: Any) -> None:
            if len(state.queue) == len(tasks) // 2 and not memory:
                memory.update(memory_of([a.pid for a in executor._actors if a.pid]))
            original(state)

        executor._dispatch = dispatch  # type: ignore[method-assign]
    out: dict[str, Any] = timed(executor, tasks)
    return {**out, **({"memory": memory} if probe else {})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--actors", default="1,2,4")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import ray

    counts = [int(n) for n in args.actors.split(",")]
    tasks = list(range(args.episodes + 1))
    ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)
    results: dict[str, Any] = {"dataset": DATASET, "episodes": args.episodes,
                               "cpus": os.cpu_count()}
    try:
        rows = {}
        for name, fn in (("local", run_local), ("ray", run_ray)):
            one = fn(1, tasks, probe=True)
            per = (one["span_s"] - one["inside_s"]) / one["episodes"]
            rows[name] = {"overhead_ms_per_episode": round(per * 1000, 3),
                          "episode_ms": round(one["inside_s"] / one["episodes"] * 1000, 2),
                          "memory_per_worker": one["memory"]}
            print(f"{name:5s} 1 worker: {per * 1000:.2f} ms overhead per episode "
                  f"(episode itself {one['inside_s'] / one['episodes'] * 1000:.1f} ms); "
                  f"memory per worker {one['memory']}", flush=True)
        results["one_worker"] = rows
        results["ray_minus_local_ms"] = round(rows["ray"]["overhead_ms_per_episode"]
                                              - rows["local"]["overhead_ms_per_episode"], 3)
        rates: dict[str, dict[int, float]] = {"local": {}, "ray": {}}
        for n in counts:
            for name, fn in (("local", run_local), ("ray", run_ray)):
                got = fn(n, tasks)
                rates[name][n] = round(got["episodes"] / got["span_s"], 2)
                print(f"{name:5s} {n} workers: {rates[name][n]:.1f} episodes/s", flush=True)
        results["episodes_per_s"] = rates
    finally:
        ray.shutdown()
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
