"""Latency of the CTF environment: resets with the task's files, steps, whole runs.

Run by hand:  python perf/bench_ctf.py [--runs N] [--json out.json]

  reset       env.reset on each available task (the task's files written into the
              sandbox's tmpfs); median, and the largest task's
  step        ``true`` through env.step
  gold        the gold agent on all 100 tasks with 2 workers (76 run, 24 skipped)
  proofs      every reference solution of tests/ctf_solutions, one action each
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from common import median_ms, timed_run

ROOT = Path(__file__).resolve().parents[1]


def env_numbers(runs: int) -> dict[str, object]:
    from intercode.envs.ctf import CtfEnv

    env = CtfEnv()
    try:
        resets: dict[int, float] = {}
        for index in env.available_tasks():
            env.reset(options={"task": index})  # warm: files fetched and verified once
            start = time.perf_counter()
            env.reset(options={"task": index})
            resets[index] = (time.perf_counter() - start) * 1000
        env.reset(options={"task": 4})
        step = median_ms(lambda: env.step("true"), runs)
        largest = max(env.available_tasks(),
                      key=lambda i: sum(a.file.size for a in env.dataset[i].assets if a.file))
        proofs = {}
        for script in sorted((ROOT / "tests" / "ctf_solutions").glob("*.sh")):
            env.reset(options={"task": int(script.stem)})
            start = time.perf_counter()
            env.step(script.read_text())
            proofs[int(script.stem)] = time.perf_counter() - start
    finally:
        env.close()
    size = sum(a.file.size for a in env.dataset[largest].assets if a.file)
    slowest = max(proofs, key=lambda k: proofs[k])
    return {"reset_median_ms": statistics.median(resets.values()),
            "reset_largest_ms": resets[largest], "largest_task": largest,
            "largest_task_bytes": size, "step_ms": step,
            "proofs": len(proofs), "proofs_total_s": sum(proofs.values()),
            "proof_slowest_task": slowest, "proof_slowest_s": proofs[slowest]}


def gold_run() -> dict[str, object]:
    summary, elapsed, _ = timed_run(env="ctf", dataset="intercode-ctf", agent="gold", workers=2)
    return {"gold_s": elapsed, "gold_ok": summary["ok"], "gold_skipped": summary["skipped"],
            "gold_success": summary["success"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    numbers = {**env_numbers(args.runs), **gold_run()}
    for key, value in numbers.items():
        print(f"{key:22s} {value:.3f}" if isinstance(value, float) else f"{key:22s} {value}")
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
