"""Latency of the Python environment, beside a bare interpreter and a Jupyter kernel.

Run by hand:  python perf/bench_python.py [--runs N] [--json out.json]
(the Jupyter comparison needs ``pip install jupyter_client ipykernel``).

  floor       ``1+1`` in a bare persistent ``python3`` over pipes (no sandbox)
  step        ``1+1`` in the sandboxed interpreter, and through env.step
  jupyter     ``1+1`` as a Jupyter kernel execute round trip (execute_reply + idle)
  reset       a fresh interpreter (sandbox reset) vs a Jupyter kernel restart
  replay      gold of all 974 MBPP tasks with 2 workers
  cpu         (--cpu) where an episode's CPU goes (reset to a task, its gold as the one
              action, submit), on the MBPP tasks whose code is cheap (setup, gold and
              tests under 0.3 ms here: what is left is ours): this process's and the
              sandboxes' CPU by phase, the code's own CPU measured apart (the gold run
              twice, as the agent's action and as the gold, with the tests each time, in
              this interpreter) and the rest, the overhead per episode
  store       (--store) a task's first episode (reset, the gold as the one action, submit)
              with the gold's outcomes stored by earlier runs (``gold_cache``) and
              without, in one process, alternately in blocks of distinct cheap tasks (each
              environment sees each task once): the CPU per episode of each, and the
              median of the paired differences; the store is filled first (two scorings
              of each task confirm its entry), in a temporary cache directory
Targets: step < 0.2 ms and >= 10x faster than Jupyter; reset < 2 ms and
>= 200x faster than a kernel restart; replay < 10 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from common import emit, median_ms, pipe_floor, timed_run

LOOP = ("import sys\nns = {}\nfor line in sys.stdin:\n    src = line.replace('\\\\n', '\\n')\n"
        "    try:\n        v = eval(src, ns)\n        print(repr(v))\n    except SyntaxError:\n"
        "        exec(src, ns)\n    print('__end__', flush=True)\n")


def bare_floor(runs: int) -> float:
    return pipe_floor([sys.executable, "-u", "-c", LOOP], b"1+1\n", b"__end__", runs)


def sandbox_numbers(runs: int) -> dict[str, float]:
    from intercode.envs.python import PythonEnv
    from intercode.sandbox.bwrap import BwrapSandbox
    from intercode.sandbox.filetree import FileTree

    box = BwrapSandbox(shell="python")
    box.start()
    box.load(FileTree.of([]))
    try:
        step = median_ms(lambda: box.run("1+1"), runs)

        def reset_after_use() -> float:
            box.run("x = [1] * 100")
            time.sleep(0.003)  # the spare interpreter is made while the agent thinks
            start = time.perf_counter()
            box.reset()
            return (time.perf_counter() - start) * 1000

        resets = sorted(reset_after_use() for _ in range(max(200, runs // 10)))
    finally:
        box.close()
    env = PythonEnv("mbpp")
    try:
        env.reset(options={"task": 0})
        env_step = median_ms(lambda: env.step("1+1"), runs)
    finally:
        env.close()
    return {"step_sandbox_ms": step, "step_env_ms": env_step,
            "reset_ms": statistics.median(resets)}


def jupyter_numbers(runs: int) -> dict[str, float]:
    try:
        from jupyter_client.manager import start_new_kernel
    except ImportError:
        return {}
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        def execute() -> None:
            kc.execute_interactive("1+1", store_history=False, output_hook=lambda m: None,
                                   timeout=30)

        step = median_ms(execute, max(200, runs // 10))
        restarts = []
        for _ in range(10):
            start = time.perf_counter()
            km.restart_kernel(now=True)
            kc.wait_for_ready(timeout=60)
            restarts.append((time.perf_counter() - start) * 1000)
        return {"jupyter_step_ms": step, "jupyter_restart_ms": statistics.median(restarts)}
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


CHEAP_S = 0.0003


def _own_cpu_s(task: Any) -> float | None:
    """CPU seconds of a task's code run once here (setup, gold, each test), or None
    when it fails in this interpreter."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    start = time.process_time()
    try:
        exec(task.test_setup_code or "", namespace)
        exec(task.gold, namespace)
        for test in task.tests:
            exec(test, namespace)
    except Exception:
        return None
    return time.process_time() - start


def episode_cpu(episodes: int) -> dict[str, object]:
    """Mean CPU per MBPP episode on the cheap tasks, by phase, and its overhead."""
    import random

    from common import episode_cpu_split, episode_cpu_whole

    from intercode.envs.factory import make_env
    from intercode.envs.settings import EnvSettings

    env = make_env("python", "mbpp", EnvSettings())
    env.warm_up()
    try:
        cheap = []
        for index in range(len(env.dataset)):
            own = _own_cpu_s(env.dataset[index])
            if own is not None and own < CHEAP_S:
                cheap.append(index)
        picks = random.Random(7).choices(cheap, k=episodes)
        episode_cpu_split(env, picks[:50])  # warm
        whole = episode_cpu_whole(env, picks)
        per = episode_cpu_split(env, picks)
        own_s = sum(2 * (_own_cpu_s(env.dataset[i]) or 0.0) for i in picks)
    finally:
        env.close()
    phased = sum(v["host_ms"] + v["sandbox_ms"] for v in per.values())
    own_ms = 1000 * own_s / len(picks)
    return {"episodes": len(picks), "cheap_tasks": len(cheap), "phases": per,
            "episode_cpu_ms_phased": phased, "episode_cpu_ms": whole,
            "of_which_the_code_ms": own_ms,
            "of_which_the_rest_ms": whole - own_ms}


def first_episodes(blocks: int, size: int) -> dict[str, object]:
    """CPU per first episode of a task, the gold's outcomes stored and not (see --store)."""
    import os
    import random
    import tempfile

    from common import episode_cpu_whole

    from intercode.envs.factory import make_env
    from intercode.envs.settings import EnvSettings

    with tempfile.TemporaryDirectory() as cache:
        os.environ["INTERCODE_CACHE"] = cache
        fill = make_env("python", "mbpp", EnvSettings(gold_cache=True))
        try:
            cheap = [i for i in range(len(fill.dataset))
                     if (own := _own_cpu_s(fill.dataset[i])) is not None and own < CHEAP_S]
            random.Random(3).shuffle(cheap)
            cheap = cheap[:blocks * size]
            for _ in range(2):  # a candidate, then confirmed
                episode_cpu_whole(fill, cheap)
        finally:
            fill.close()
        envs = {stored: make_env("python", "mbpp", EnvSettings(gold_cache=stored))
                for stored in (False, True)}
        ms: dict[bool, list[float]] = {False: [], True: []}
        try:
            for env in envs.values():
                env.warm_up()
            for n in range(blocks):
                block = cheap[n * size:(n + 1) * size]
                for stored in ((False, True) if n % 2 == 0 else (True, False)):
                    ms[stored].append(episode_cpu_whole(envs[stored], block))
        finally:
            for env in envs.values():
                env.close()
    return {"tasks": len(cheap), "blocks": blocks,
            "not_stored_ms": statistics.median(ms[False]),
            "stored_ms": statistics.median(ms[True]),
            "paired_difference_ms": statistics.median(
                [b - a for a, b in zip(ms[False], ms[True], strict=True)]),
            "blocks_ms": {"not_stored": ms[False], "stored": ms[True]}}


def gold_replay(workers: int) -> dict[str, float]:
    summary, wall, _ = timed_run(env="python", dataset="mbpp", agent="gold", workers=workers)
    return {"replay_wall_s": wall, "replay_episodes_per_s": 974 / wall,
            "replay_success": summary["success"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--cpu", action="store_true",
                        help="only where an episode's CPU goes (see the docstring)")
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--store", action="store_true",
                        help="only first episodes with and without stored gold outcomes")
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.store:
        emit(first_episodes(args.blocks, 40), args.json)
        return 0
    if args.cpu:
        emit(episode_cpu(args.episodes), args.json)
        return 0
    results = {"floor_bare_python_ms": bare_floor(args.runs)}
    results.update(sandbox_numbers(args.runs))
    results.update(jupyter_numbers(args.runs))
    if "jupyter_step_ms" in results:
        results["speedup_step_vs_jupyter"] = results["jupyter_step_ms"] / results["step_sandbox_ms"]
        results["speedup_reset_vs_restart"] = results["jupyter_restart_ms"] / results["reset_ms"]
    if not args.skip_replay:
        results.update(gold_replay(args.workers))
    for name, value in results.items():
        print(f"{name:28s} {value:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
