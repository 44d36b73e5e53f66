"""Two source trees' CPU per episode, measured in alternating blocks.

Run by hand (not a test):
    python perf/ab_episodes.py --env bash --a /path/to/before/src --b src [--blocks 12]

Before-and-after figures taken minutes apart on a shared machine move by more than a
change of a few tenths of a millisecond does (other tenants, memory scanning, frequency).
This runs both trees at once, each in a worker process that builds its environment and
warms it first, then has them run the same block of episodes in turn, A B A B ..., one
at a time: the drift of the machine reaches both alike, and the paired differences show
the change. A block is every picked task's episode once (reset, its gold as the one
action, submit; the gold's result cached as a run has it); its figure is the CPU of the
worker and of its sandboxes (``common.episode_cpu_whole``) per episode.

  bash     nl2bash, the tasks under 0.5 s whose gold result is stored
  python   mbpp, the tasks whose code costs under 0.3 ms (see bench_python.py)
  sql      spider-dev on SQLite, 1,000 random tasks

``--answer wrong`` (python only): the action defines the task's function to return
``None`` instead of the gold, so that every test fails: an answer is judged at every
episode (an answer that passes as the gold does is judged once, see
``envs/outcome_memo.py``), as early in an RL run.

Reports each tree's median and best block and the median of the paired differences
(B minus A, a pair being two neighbouring blocks).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _picks(kind: str, env: Any) -> list[int]:
    import random

    from common import cached_gold_tasks, episode

    if kind == "bash":
        return cached_gold_tasks(env)[0]
    if kind == "python":
        from bench_python import CHEAP_S, _own_cpu_s

        cheap = [i for i in range(len(env.dataset))
                 if (own := _own_cpu_s(env.dataset[i])) is not None and own < CHEAP_S]
        picks = random.Random(7).choices(cheap, k=300)
    else:
        picks = random.Random(7).choices(range(len(env.dataset)), k=1000)
    for index in sorted(set(picks)):  # every gold's result cached, as a run has it
        episode(env, index)
    return picks


def wrong_answer(task: Any) -> str:
    """The task's function, defined to return ``None``: every test fails."""
    return f"def {task.entry_point}(*args, **kwargs):\n    return None\n"


def worker(kind: str, answer: str) -> int:
    """Build the environment, warm it, then run a block per line read; print its figure."""
    sys.path.insert(0, str(HERE))
    from common import episode_cpu_whole

    from intercode.envs.factory import make_env
    from intercode.envs.settings import EnvSettings

    name = {"bash": "nl2bash", "python": "mbpp", "sql": "spider-dev"}[kind]
    env = make_env(kind, name, EnvSettings())
    env.warm_up()
    try:
        picks = _picks(kind, env)
        act = wrong_answer if answer == "wrong" else None
        episode_cpu_whole(env, picks, act)  # one untimed block
        print(json.dumps({"ready": len(picks)}), flush=True)
        for _line in sys.stdin:
            print(json.dumps({"ms": episode_cpu_whole(env, picks, act)}), flush=True)
    finally:
        env.close()
    return 0


def _start(kind: str, src: str, answer: str) -> subprocess.Popen[str]:
    environ = dict(os.environ, PYTHONPATH=str(Path(src).resolve()))
    return subprocess.Popen([sys.executable, __file__, "--worker", kind, "--answer", answer],
                            env=environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def _read(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit("a worker exited early (see its error above)")
    return dict(json.loads(line))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=("bash", "python", "sql"), default="bash")
    parser.add_argument("--a", help="the first tree's src folder")
    parser.add_argument("--b", help="the second tree's src folder")
    parser.add_argument("--blocks", type=int, default=12, help="blocks per tree")
    parser.add_argument("--answer", choices=("gold", "wrong"), default="gold",
                        help="the one action: the gold, or (python) a function that "
                             "returns None")
    parser.add_argument("--worker", choices=("bash", "python", "sql"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.answer)
    if not args.a or not args.b:
        parser.error("--a and --b name the two trees' src folders")
    if args.answer == "wrong" and args.env != "python":
        parser.error("--answer wrong is for --env python")
    procs = {"a": _start(args.env, args.a, args.answer),
             "b": _start(args.env, args.b, args.answer)}
    try:
        episodes = {tree: _read(proc)["ready"] for tree, proc in procs.items()}
        figures: dict[str, list[float]] = {"a": [], "b": []}
        for block in range(2 * args.blocks):
            tree = "ab"[block % 2] if (block // 2) % 2 == 0 else "ba"[block % 2]  # ABBA
            proc = procs[tree]
            assert proc.stdin is not None
            proc.stdin.write("block\n")
            proc.stdin.flush()
            figures[tree].append(_read(proc)["ms"])
    finally:
        for proc in procs.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=120)
    pairs = [b - a for a, b in zip(figures["a"], figures["b"], strict=True)]
    out = {"env": args.env, "answer": args.answer, "episodes_per_block": episodes,
           "a": {"src": args.a, "median_ms": statistics.median(figures["a"]),
                 "best_ms": min(figures["a"]), "blocks_ms": figures["a"]},
           "b": {"src": args.b, "median_ms": statistics.median(figures["b"]),
                 "best_ms": min(figures["b"]), "blocks_ms": figures["b"]},
           "b_minus_a_median_ms": statistics.median(pairs)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
