"""``intercode eval``: evaluate an agent on a dataset (a run folder)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from intercode.agents.names import AGENTS, DEFAULT_TURNS
from intercode.cli.agent_options import add_model_options, model_config, strategy_options
from intercode.cli.argtypes import integer, number
from intercode.cli.options import MAX_WORKERS, add_env_options, dataset, settings
from intercode.errors import ConfigError

if TYPE_CHECKING:
    from intercode.runner.executors import ExecutorFactory

__all__ = ["add_eval", "cmd_eval"]


def add_eval(sub: Any) -> None:
    """The ``eval`` sub-command's parser."""
    ev = sub.add_parser("eval", help="evaluate an agent on a dataset")
    add_env_options(ev)
    ev.add_argument("--agent", default="gold", choices=list(AGENTS),
                    help="gold, replay, human, or an LLM strategy: single-turn, try-again "
                         "(default 10 turns), react (10), plan-solve (plan + 3 repairs), "
                         "tools (native function calling, 10)")
    ev.add_argument("--trajectories", help="recorded episodes for --agent replay")
    add_model_options(ev)
    ev.add_argument("--tasks", help="task indices, e.g. 0-99,120 (default: all)")
    ev.add_argument("--workers", type=integer(1, MAX_WORKERS), default=2,
                    help="episodes at once (2)")
    ev.add_argument("--executor", choices=["local", "ray"], default="local",
                    help="local: worker processes on this machine; ray: actors on a Ray "
                         "cluster, one per --workers (pip install 'intercode[ray]'; "
                         "docs/scaling.md) (local)")
    ev.add_argument("--ray-address", default=None, metavar="ADDRESS",
                    help="ray: the cluster: auto (the one started with `ray start` here), "
                         "local (a new one in this process), ray://HOST:PORT, HOST:PORT "
                         "(default: $RAY_ADDRESS, else local)")
    ev.add_argument("--ray-actor-cpus", type=number(0, 1024, low_open=True), default=None,
                    metavar="CPUS",
                    help="ray: CPUs each actor reserves (1; less for agents that mostly "
                         "wait for a model, e.g. 0.25)")
    ev.add_argument("--cpu-pinning", choices=["auto", "on", "off"], default=None,
                    help="local: whether each worker and its sandboxes keep a CPU of their "
                         "own (on bwrap its sandboxes then see one CPU: nproc says 1); auto: "
                         "when the agent calls no model (gold, replay, noop) and the run "
                         "starts one worker per CPU the command may use (taskset chooses "
                         "them), on bwrap; on: every run's workers (round robin when there "
                         "are more workers than CPUs); off: never; not with --agent human "
                         "(auto)")
    ev.add_argument("--turns", type=integer(1), default=None, help="turn limit per episode")
    ev.add_argument("--output", default=None,
                    help="run folder (default: runs/<env>-<dataset>-<agent>-<time>); "
                         "locked while the run lives")
    ev.add_argument("--resume", action="store_true", help="finish an interrupted run")
    ev.add_argument("--upstream-quirks", action="store_true",
                    help="run actions as upstream did (quote stripping, stateless exec)")
    ev.add_argument("--no-progress", action="store_true")


def executor(args: argparse.Namespace) -> ExecutorFactory:
    """Where the episodes run: ``--executor`` and its options."""
    if args.executor == "ray":
        if args.cpu_pinning is not None:
            raise ConfigError("--cpu-pinning applies only to --executor local")
        from intercode.integrations.raycluster.executor import RayExecutorFactory

        return RayExecutorFactory(address=args.ray_address, actor_cpus=args.ray_actor_cpus)
    for flag, given in (("--ray-address", args.ray_address),
                        ("--ray-actor-cpus", args.ray_actor_cpus)):
        if given is not None:
            raise ConfigError(f"{flag} applies only to --executor ray")
    if args.agent == "human" and args.cpu_pinning is not None:
        raise ConfigError("--cpu-pinning applies to worker processes; --agent human plays "
                          "in this process")
    from intercode.runner.executors import LocalExecutorFactory

    return LocalExecutorFactory(cpu_pinning=args.cpu_pinning or "auto")


def cmd_eval(args: argparse.Namespace) -> int:
    """``intercode eval``."""
    chosen = executor(args)
    if args.agent != "human":  # its workers' fork server starts importing now
        chosen.prepare(args.env)
    from intercode.datasets import load_dataset
    from intercode.datasets.registry import is_dataset_file
    from intercode.runner.run import RunConfig, execute, parse_task_ranges
    from intercode.runner.summary_view import print_summary

    name = dataset(args)
    if args.output is None:
        if args.resume:
            raise ConfigError("--resume needs the --output of the run to finish")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        label = Path(name).stem if is_dataset_file(name) else name
        args.output = f"runs/{args.env}-{label}-{args.agent}-{stamp}"
    tasks = None
    if args.tasks is not None:
        tasks = parse_task_ranges(args.tasks, len(load_dataset(name, args.env)))
    turns = args.turns if args.turns is not None else DEFAULT_TURNS.get(args.agent)
    cfg = RunConfig(env=args.env, dataset=name, agent=args.agent, output=Path(args.output),
                    workers=args.workers, tasks=tasks, max_turns=turns,
                    model=model_config(args), strategy=strategy_options(args),
                    trajectories=args.trajectories, settings=settings(args),
                    resume=args.resume, executor=chosen)
    summary = execute(cfg, progress=not args.no_progress)
    print_summary(summary)
    print(f"results    {Path(args.output) / 'results.jsonl'}")
    return 0 if summary["errors"] == 0 else 1
