"""Throughput of whole runs, start-up included, and what each worker costs to start.

Run by hand (not a test):  python perf/bench_throughput.py [--parts P,...] [--json out.json]

Every figure comes from fresh ``python -m intercode eval`` processes (what a user runs),
timed from launch to exit; the CPU is that of the whole process tree (the command, its
workers and their sandboxes: ``RUSAGE_CHILDREN`` once everything is reaped, this process
being their subreaper).

  workers   the CPU a worker costs: the same 8 gold episodes of ``bash-demo`` run with 1, 2
            and 4 workers; each worker more adds the CPU of its start (the process, its
            imports, its environment and sandboxes) and of its close. Goal: <= 150 ms.
  nl2bash   the NL2Bash golds on 2 workers, the walkers left out (the tasks whose gold
            walks the whole file system: their episode takes over 0.5 s in a first run,
            which also fills the gold cache), with the gold cache warm and without it
            (``--no-gold-cache``). Goals: >= 150 episodes/s warm, >= 80 without.
  mbpp      the 974 MBPP golds on 2 workers.
  spider    the 1034 Spider golds on 2 workers (SQLite).
  rl        an RL-style loop in one process on one core, per environment: reset to a
            random task, one action (the gold), submit; episodes per second and CPU (this
            process's and its sandboxes') per episode.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import descendants_cpu_s, emit

ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    """The runs' environment: this checkout's code first; without
    ``PYTHONDONTWRITEBYTECODE``, which some machines set (this one did): with it, every
    process compiled every module it imported from source (the fork server alone some
    0.15 s more), which an installed package, compiled when installed, never does. The
    first run writes the compiled files; the figures come from runs that read them."""
    src = str(ROOT / "src")
    path = os.environ.get("PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": src if not path else f"{src}{os.pathsep}{path}"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _become_subreaper() -> None:
    """Orphans of the runs (a fork server outlives its run by a moment) become this
    process's children, so that their CPU is counted too."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _reap_orphans() -> None:
    """Wait for every descendant left (see :func:`_become_subreaper`)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def run_eval(args: list[str]) -> dict[str, Any]:
    """One ``intercode eval`` process: wall and CPU seconds, and its records."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cpu0, start = _children_cpu(), time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "intercode", "eval", *args, "--agent",
                               "gold", "--output", str(out)], env=_env(),
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        _reap_orphans()
        cpu = _children_cpu() - cpu0
        if proc.returncode != 0:
            raise SystemExit(f"intercode eval {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
        lines = (out / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    return {"wall_s": wall, "cpu_s": cpu, "records": records,
            "episodes": len(records), "episodes_per_s": len(records) / wall,
            "success": sum(1 for r in records if r.get("success"))}


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "records"}


def workers_part(repeat: int) -> dict[str, Any]:
    """CPU and wall of the same 8 episodes with 1, 2 and 4 workers (medians)."""
    out: dict[str, Any] = {}
    samples: dict[int, list[dict[str, Any]]] = {1: [], 2: [], 4: []}
    for _ in range(repeat):  # interleaved, so that a load spike hits all alike
        for workers in samples:
            samples[workers].append(run_eval(["bash", "--dataset", "bash-demo",
                                              "--workers", str(workers)]))
    for workers, runs in samples.items():
        cpus = sorted(r["cpu_s"] for r in runs)
        walls = sorted(r["wall_s"] for r in runs)
        out[f"workers_{workers}"] = {"cpu_s": cpus[len(cpus) // 2],
                                     "wall_s": walls[len(walls) // 2]}
    one, four = out["workers_1"]["cpu_s"], out["workers_4"]["cpu_s"]
    out["cpu_per_extra_worker_ms"] = 1000 * (four - one) / 3
    return out


def without_walkers() -> tuple[list[int], str]:
    """One run of every NL2Bash gold (it fills the gold cache): the walkers (the tasks
    whose episode took over 0.5 s) and the others, as ``--tasks`` takes them."""
    first = run_eval(["bash", "--dataset", "nl2bash", "--workers", "2"])
    walkers = sorted(r["task"] for r in first["records"] if r["duration_s"] > 0.5)
    keep = [r["task"] for r in first["records"] if r["task"] not in walkers]
    return walkers, ",".join(str(t) for t in sorted(keep))


def nl2bash_part() -> dict[str, Any]:
    walkers, tasks = without_walkers()
    warm = run_eval(["bash", "--dataset", "nl2bash", "--workers", "2", "--tasks", tasks])
    cold = run_eval(["bash", "--dataset", "nl2bash", "--workers", "2", "--tasks", tasks,
                     "--no-gold-cache"])
    return {"walkers": walkers, "warm_cache": _brief(warm), "no_gold_cache": _brief(cold)}


def rl_loop(env_name: str, dataset: str, episodes: int) -> dict[str, Any]:
    """Reset to a random task, the gold as the one action, submit; in this process."""
    from intercode.envs.factory import make_env
    from intercode.envs.settings import EnvSettings
    from intercode.errors import IntercodeError

    env = make_env(env_name, dataset, EnvSettings())
    env.warm_up()
    rng = random.Random(7)
    try:
        usable = []
        for index in range(len(env.dataset)):  # warm (the gold cache filled); walkers out
            start = time.perf_counter()
            try:
                env.reset(options={"task": index})
            except IntercodeError:  # a task this machine cannot run (the network)
                continue
            env.step(env.task.gold)
            env.step("submit")
            if time.perf_counter() - start <= 0.5:
                usable.append(index)
        picks = [rng.choice(usable) for _ in range(episodes)]
        box0, host0, start = descendants_cpu_s(), time.process_time(), time.perf_counter()
        done = 0
        for index in picks:
            env.reset(options={"task": index})
            env.step(env.task.gold)
            env.step("submit")
            done += 1
        wall = time.perf_counter() - start
        host, boxes = time.process_time() - host0, descendants_cpu_s() - box0
    finally:
        env.close()
    return {"episodes": done, "tasks_left_out": len(env.dataset) - len(usable),
            "episodes_per_s": done / wall,
            "cpu_ms_per_episode": 1000 * (host + boxes) / done,
            "host_cpu_ms_per_episode": 1000 * host / done,
            "sandbox_cpu_ms_per_episode": 1000 * boxes / done}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="workers,nl2bash,mbpp,spider,rl")
    parser.add_argument("--repeat", type=int, default=5, help="runs per worker count")
    parser.add_argument("--episodes", type=int, default=300, help="RL-loop episodes")
    parser.add_argument("--rl-envs", default="bash,sql,python,ctf",
                        help="the environments of the rl part")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    parts = args.parts.split(",")
    _become_subreaper()
    results: dict[str, Any] = {"cores": os.cpu_count(), "load": os.getloadavg()[0]}
    if "workers" in parts:
        results["workers"] = workers_part(args.repeat)
    if "nl2bash" in parts:
        results["nl2bash"] = nl2bash_part()
    if "mbpp" in parts:
        results["mbpp"] = _brief(run_eval(["python", "--dataset", "mbpp", "--workers", "2"]))
    if "spider" in parts:
        results["spider"] = _brief(run_eval(["sql", "--dataset", "spider-dev",
                                             "--workers", "2"]))
    if "rl" in parts:
        datasets = {"bash": "nl2bash", "sql": "spider-dev", "python": "mbpp",
                    "ctf": "intercode-ctf"}
        results["rl"] = {env: rl_loop(env, datasets[env], args.episodes)
                         for env in args.rl_envs.split(",")}
    results["load_after"] = os.getloadavg()[0]
    emit(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
