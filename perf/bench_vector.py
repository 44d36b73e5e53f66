"""Gymnasium vector environments: start-up and a step, sync and async (shared memory).

    python perf/bench_vector.py [--env bash] [--num-envs 4] [--steps 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import intercode  # noqa: F401  (registers the environments)
from intercode import testing
from intercode.benchmarks import get


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", default="bash")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    benchmark = get(args.env)
    for mode in ("sync", "async"):
        started = time.perf_counter()
        envs = gym.make_vec(benchmark.gym_id, num_envs=args.num_envs, vectorization_mode=mode,
                            dataset=testing.small_dataset(args.env))
        made = time.perf_counter() - started
        try:
            index = envs.call("available_tasks")[0][0]
            envs.reset(options={"task": index})
            action = benchmark.echo.format(text="'é✓ hello'")
            times = []
            for _ in range(args.steps):
                clock = time.perf_counter()
                envs.step([action] * args.num_envs)
                times.append(time.perf_counter() - clock)
        finally:
            envs.close()
        print(f"{mode:5s} make_vec {made:.2f} s; step (all {args.num_envs} envs) median "
              f"{1000 * statistics.median(times):.1f} ms")


if __name__ == "__main__":
    main()
