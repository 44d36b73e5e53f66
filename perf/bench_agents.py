"""Every LLM strategy on every environment against the scripted Chat Completions server.

Run by hand:  python perf/bench_agents.py [--workers 2] [--limit N] [--json out.json]
              python perf/bench_agents.py --agents tools [--stream] [--show-reward]

The "model" (intercode.llm.gold_responder) answers with each task's gold in the
strategy's format (``tools``: through tool calls, execute then submit, both in one
reply on odd tasks), after a detour (a reply without code) on every third task: this
shows the mechanics of whole runs, not a model's skill. The real ``openai`` client
makes every call over HTTP. For each run: episodes, success, errors, model calls,
turns, wall time, and the runner's own cost per turn: the episode's wall time minus the
time spent waiting for the model and in env.step / scoring, divided by its turns (the
reset of the episode and the policy's prompt building and parsing are in it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import timed_run

DATASETS = {"bash": "nl2bash", "sql": "spider-dev", "python": "mbpp", "ctf": "intercode-ctf"}
TURNS = {"single-turn": 1, "try-again": 10, "react": 10, "plan-solve": None, "tools": 10}


def one_run(env: str, agent: str, workers: int, limit: int | None, stream: bool = False,
            show_reward: bool = False) -> dict[str, object]:
    from intercode.agents.llm import StrategyOptions
    from intercode.datasets import load_dataset
    from intercode.llm.client import ModelConfig
    from intercode.llm.gold_responder import GoldResponder
    from intercode.llm.scripted_server import ScriptedChatServer

    dataset = load_dataset(DATASETS[env])
    tasks = tuple(range(len(dataset) if limit is None else min(limit, len(dataset))))
    with ScriptedChatServer(GoldResponder(dataset)) as server:
        summary, wall, records = timed_run(
            env=env, dataset=dataset.name, agent=agent, workers=workers, tasks=tasks,
            max_turns=TURNS[agent],
            model=ModelConfig("scripted", base_url=server.url, stream=stream),
            strategy=StrategyOptions(show_reward=show_reward and agent == "tools"))
    ok = [r for r in records if r["status"] == "ok"]
    turns = sum(len(r["turns"]) for r in ok)
    waiting = sum((r.get("llm") or {}).get("latency_s", 0.0) for r in ok)
    in_env = sum(t.get("env_s") or 0.0 for r in ok for t in r["turns"])
    spent = sum(r["duration_s"] for r in ok)
    invalid = sum(1 for r in ok for t in r["turns"] if not t["valid"])
    return {"env": env, "agent": agent, "episodes": len(records), "ok": summary["ok"],
            "invalid_turns": invalid,
            "skipped": summary["skipped"], "errors": summary["errors"],
            "success": summary["success"], "calls": (summary["llm"] or {}).get("calls", 0),
            "turns": turns, "wall_s": round(wall, 2),
            "model_ms_per_call": round(1000 * waiting / max(1, (summary["llm"] or {}).get(
                "calls", 1)), 3),
            "env_ms_per_turn": round(1000 * in_env / max(1, turns), 3),
            "runner_ms_per_turn": round(1000 * (spent - waiting - in_env) / max(1, turns), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="first N tasks of each dataset")
    parser.add_argument("--envs", default="bash,sql,python,ctf")
    parser.add_argument("--agents", default=",".join(TURNS))
    parser.add_argument("--stream", action="store_true", help="stream every reply")
    parser.add_argument("--show-reward", action="store_true",
                        help="--agent tools: score each action (not on ctf)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    header = ("env", "agent", "episodes", "ok", "skipped", "errors", "success", "calls",
              "turns", "invalid_turns", "wall_s", "model_ms_per_call", "env_ms_per_turn",
              "runner_ms_per_turn")
    print(" ".join(f"{h:>11s}" for h in header))
    for env in args.envs.split(","):
        for agent in args.agents.split(","):
            show = args.show_reward and not (agent == "tools" and env == "ctf")
            row = one_run(env, agent, args.workers, args.limit, args.stream, show)
            rows.append(row)
            print(" ".join(f"{row[h]!s:>11s}" for h in header), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
