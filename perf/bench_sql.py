"""Latency and throughput of the SQL environment, with the bare query time alongside.

Run by hand:  python perf/bench_sql.py [--mysql-url URL] [--runs N] [--json out.json]

  bare        sqlite3 ``SELECT 1`` on a plain connection (and PyMySQL on the server)
  step        env.step("SELECT 1") on the same backend: the overhead is the difference
              (on SQLite, a round trip to the engine in the agent's sandbox)
  reset       env.reset on a task (a pristine private copy of its database)
  reset_step  env.reset then a first step (the engine makes the copy after replying
              to the reset, so part of its cost can move to the first step)
  replay      gold replay of all 1034 Spider dev tasks with 2 workers
  cpu         (--cpu) where an episode's CPU goes on SQLite (reset to a Spider task, its
              gold as the one action, submit): this process's and the sandbox's CPU by
              phase, the query's own CPU measured apart (the gold on a plain in-memory
              copy of its database, here) and the rest, the overhead per episode
Targets: step overhead < 0.1 ms (SQLite), reset < 0.5 ms, replay < 3 s;
server: step < 0.3 ms, replay reported.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path

from common import emit, median_ms, timed_run


def bare(backend: str, url: str | None, runs: int) -> float:
    if backend == "sqlite":
        conn = sqlite3.connect(":memory:")
        return median_ms(lambda: conn.execute("SELECT 1").fetchall(), runs)
    import pymysql

    from intercode.sql.mysql_backend import parse_url

    conn = pymysql.connect(**parse_url(url or ""), autocommit=True, ssl_disabled=True)
    cur = conn.cursor()

    def query() -> object:
        cur.execute("SELECT 1")
        return cur.fetchall()

    try:
        return median_ms(query, runs)
    finally:
        conn.close()


def env_numbers(backend: str, url: str | None, runs: int) -> dict[str, float]:
    from intercode.envs.sql import SqlEnv

    env = SqlEnv("spider-dev", backend=backend, mysql_url=url)
    try:
        env.reset(options={"task": 0})
        step = median_ms(lambda: env.step("SELECT 1"), runs)
        tasks = iter(range(10**9))
        reset = median_ms(lambda: env.reset(options={"task": next(tasks) % 1034}),
                          max(200, runs // 10))
        reset_step = median_ms(lambda: (env.reset(options={"task": next(tasks) % 1034}),
                                        env.step("SELECT 1")), max(200, runs // 10))
        env.reset(options={"task": 0})
        env.step(env.task.gold)
        reward = median_ms(env.evaluate, max(200, runs // 10))
        return {"step_ms": step, "reset_ms": reset, "reset_then_step_ms": reset_step,
                "reward_cached_gold_ms": reward}
    finally:
        env.close()


def _query_cpu_s(image: bytes, query: str) -> float:
    """CPU seconds of ``query`` on a plain in-memory copy of a database image."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(image)
        start = time.process_time()
        try:
            conn.execute(query).fetchall()
        except sqlite3.Error:
            pass
        return time.process_time() - start
    finally:
        conn.close()


def episode_cpu(episodes: int) -> dict[str, object]:
    """Mean CPU per Spider episode on SQLite, by phase, and its overhead."""
    import random

    from common import episode_cpu_split, episode_cpu_whole

    from intercode.envs.factory import make_env
    from intercode.envs.settings import EnvSettings
    from intercode.sql.store import dump_store

    env = make_env("sql", "spider-dev", EnvSettings())
    env.warm_up()
    images = dump_store().images
    try:
        tasks = list(range(len(env.dataset)))
        picks = random.Random(7).choices(tasks, k=episodes)
        episode_cpu_split(env, tasks)  # warm: every gold's result cached, as a run has it
        whole = episode_cpu_whole(env, picks)
        per = episode_cpu_split(env, picks)
        own_s = sum(_query_cpu_s(images[env.dataset[i].db], env.dataset[i].gold)
                    for i in picks)
    finally:
        env.close()
    phased = sum(v["host_ms"] + v["sandbox_ms"] for v in per.values())
    own_ms = 1000 * own_s / len(picks)
    return {"episodes": len(picks), "phases": per, "episode_cpu_ms_phased": phased,
            "episode_cpu_ms": whole,
            "of_which_the_query_ms": own_ms, "of_which_the_rest_ms": whole - own_ms}


def replay(backend: str, url: str | None, workers: int) -> dict[str, float]:
    summary, wall, _ = timed_run(env="sql", dataset="spider-dev", agent="gold", workers=workers,
                                 sql_backend=backend, mysql_url=url)
    return {"wall_s": wall, "episodes_per_s": 1034 / wall, "success": summary["success"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--mysql-url", help="also measure the server backend")
    parser.add_argument("--cpu", action="store_true",
                        help="only where an episode's CPU goes (see the docstring)")
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.cpu:
        emit(episode_cpu(args.episodes), args.json)
        return 0
    results: dict[str, dict[str, float]] = {}
    backends = ["sqlite"] + (["mysql"] if args.mysql_url else [])
    for backend in backends:
        numbers = {"bare_query_ms": bare(backend, args.mysql_url, args.runs)}
        numbers.update(env_numbers(backend, args.mysql_url, args.runs))
        numbers["step_overhead_ms"] = numbers["step_ms"] - numbers["bare_query_ms"]
        numbers.update({f"replay_{k}": v for k, v in
                        replay(backend, args.mysql_url, args.workers).items()})
        results[backend] = numbers
        print(backend, {k: round(v, 4) for k, v in numbers.items()})
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
