"""Seconds per episode through Inspect vs ``intercode eval``, with the gold actions.

Run by hand:  python perf/bench_inspect.py [--tasks N] [--json out.json]

For each environment, the same tasks are played with the gold action twice, one episode
at a time (``--workers 1`` / ``max_samples=1``), each path in a fresh process state:

  intercode  ``intercode eval ENV --agent gold`` (the runner: records, results.jsonl)
  inspect    ``inspect_ai.eval(intercode/ENV)`` with mockllm answering the gold in a
             fenced block (Try Again solver, intercode's scorer, an .eval log)

Both include building the environment (sandbox start) once and their per-run fixed costs
(Inspect: the eval's set-up and its log); modules are imported before the clocks start.
The figure is wall time divided by episodes. The rewards must agree (all 1.0); the
script says if they do not.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CASES = [("bash", "bash-demo", 8), ("sql", "spider-dev", 40), ("python", "mbpp", 20),
         ("ctf", "intercode-ctf", 10)]


def intercode_path(env: str, dataset: str, tasks: list[int], out: Path) -> tuple[float, list]:
    from intercode.cli import main

    spec = ",".join(map(str, tasks))
    start = time.perf_counter()
    code = main(["eval", env, "--dataset", dataset, "--tasks", spec, "--agent", "gold",
                 "--workers", "1", "--output", str(out), "--no-progress"])
    elapsed = time.perf_counter() - start
    assert code == 0, f"intercode eval exited {code}"
    rewards = [json.loads(line)["reward"] for line in (out / "results.jsonl").read_text()
               .splitlines()]
    return elapsed, rewards


def inspect_path(env: str, dataset: str, tasks: list[int], out: Path) -> tuple[float, list]:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from intercode.benchmarks import get
    from intercode.datasets import load_dataset
    from intercode.integrations.inspectai.episode import POOL
    from intercode.integrations.inspectai.tasks import intercode_task

    d = load_dataset(dataset)
    language = get(env).prompting.language
    gold = {d[i].query: get(env).gold_action(d[i]) for i in tasks}

    def reply(messages: list[Any], *_: Any) -> ModelOutput:
        text = "\n".join(m.text for m in messages if m.role == "user")
        code = next((g for q, g in gold.items() if q in text), "skip")
        out = ModelOutput.from_content("mockllm/model", f"```{language}\n{code}\n```")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    start = time.perf_counter()
    task = intercode_task(env, dataset, tasks=tasks)
    log = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=reply),
                       display="none", log_dir=str(out), max_samples=1)[0]
    POOL.close()
    elapsed = time.perf_counter() - start
    assert log.status == "success", log.error
    return elapsed, [s.scores["intercode_scorer"].value for s in log.samples or []]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=None, help="tasks per environment")
    parser.add_argument("--env", action="append", help="only these environments")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    # both paths' modules imported before any clock starts (Inspect's import is ~1 s)
    import inspect_ai  # noqa: F401

    import intercode.cli  # noqa: F401
    from intercode.integrations.inspectai.episode import POOL
    from intercode.integrations.inspectai.running import Setup
    from intercode.integrations.inspectai.tasks import samples

    results = {}
    for env, dataset, count in CASES:
        if args.env and env not in args.env:
            continue
        found, _ = samples(Setup(env, dataset), None)
        POOL.close()
        tasks = [int(s.id) for s in found][:args.tasks or count]  # type: ignore[arg-type]
        with tempfile.TemporaryDirectory() as tmp:
            ic_s, ic_r = intercode_path(env, dataset, tasks, Path(tmp) / "run")
            in_s, in_r = inspect_path(env, dataset, tasks, Path(tmp) / "logs")
        agree = sorted(ic_r) == sorted(in_r)
        results[env] = {"dataset": dataset, "episodes": len(tasks),
                        "intercode_s_per_episode": round(ic_s / len(tasks), 4),
                        "inspect_s_per_episode": round(in_s / len(tasks), 4),
                        "rewards_agree": agree, "mean_reward": sum(in_r) / len(in_r)}
        r = results[env]
        print(f"{env:7} {dataset:14} {len(tasks):3} episodes  intercode "
              f"{r['intercode_s_per_episode']:.3f} s/ep  inspect "
              f"{r['inspect_s_per_episode']:.3f} s/ep  rewards agree: {agree}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r["rewards_agree"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
