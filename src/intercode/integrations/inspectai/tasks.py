"""The Inspect tasks: ``intercode/bash``, ``intercode/sql``, ``intercode/python``,
``intercode/ctf`` and ``intercode/swe`` (samples = a dataset's tasks; solver = a strategy;
intercode's scorer)."""

from __future__ import annotations

import logging
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

from intercode.benchmarks import get
from intercode.errors import ConfigError
from intercode.integrations.inspectai.episode import POOL
from intercode.integrations.inspectai.running import Setup
from intercode.integrations.inspectai.scorer import intercode_scorer
from intercode.integrations.inspectai.solvers import STRATEGIES, react_agent, try_again

__all__ = ["bash", "ctf", "intercode_task", "python", "samples", "sql", "swe"]

log = logging.getLogger(__name__)


def task_indices(tasks: str | int | list[int] | None) -> list[int] | None:
    """``tasks`` as a list of indices (``"0,3,5"``, ``7`` or ``[0, 3]``; None: all)."""
    if tasks is None or tasks == "":
        return None
    if isinstance(tasks, int):
        return [tasks]
    if isinstance(tasks, str):
        try:
            return [int(part) for part in tasks.split(",") if part.strip()]
        except ValueError:
            raise ConfigError(f"tasks must be indices such as 0,3,5, not {tasks!r}") from None
    return [int(t) for t in tasks]


def samples(setup: Setup, tasks: list[int] | None = None) -> tuple[list[Sample],
                                                                    dict[int, str]]:
    """The dataset's tasks as samples, and the tasks left out (why they cannot run here,
    e.g. a CTF task that needs the network)."""
    env = POOL.borrow(setup.key)
    try:
        dataset = env.dataset
        indices = range(len(dataset)) if tasks is None else tasks
        out: list[Sample] = []
        skipped: dict[int, str] = {}
        for index in indices:
            if not 0 <= index < len(dataset):
                raise ConfigError(f"task {index} is not in {dataset.name} "
                                  f"(0..{len(dataset) - 1})")
            t = dataset[index]
            reason = env.unavailable(t)
            if reason is not None:
                skipped[index] = reason
                continue
            metadata: dict[str, Any] = {"env": setup.env, "dataset": dataset.name,
                                        "category": t.category, "source": t.source,
                                        "source_index": t.source_index}
            out.append(Sample(id=index, input=t.query, target=get(setup.env).gold_action(t),
                              metadata=metadata))
    finally:
        POOL.give_back(setup.key, env)
    return out, skipped


def intercode_task(env: str, dataset: str | None = None, strategy: str = "try_again",
                   turns: int = 10, tasks: str | int | list[int] | None = None,
                   sql_backend: str = "sqlite", network: bool = False,
                   sandbox: str = "bwrap") -> Task:
    """An Inspect task of benchmark ``env``: one sample per task of ``dataset``, its
    episodes in ``sandbox`` (the sandbox backend: ``bwrap`` or ``docker``)."""
    benchmark = get(env)
    dataset = dataset or benchmark.default_dataset
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if turns < 1:
        raise ConfigError(f"turns must be at least 1, got {turns}")
    setup = Setup(env, dataset, sql_backend, network, sandbox)
    found, skipped = samples(setup, task_indices(tasks))
    if skipped:
        log.warning("intercode/%s: %d task(s) of %s cannot run here and are left out "
                    "(e.g. task %d: %s)", env, len(skipped), dataset, next(iter(skipped)),
                    next(iter(skipped.values())))
    make = try_again if strategy == "try_again" else react_agent
    solver = make(env, dataset, turns=turns, sql_backend=sql_backend, network=network,
                  sandbox=sandbox)
    return Task(dataset=MemoryDataset(found, name=dataset), solver=solver,
                scorer=intercode_scorer(), name=f"intercode/{env}",
                message_limit=None if strategy == "try_again" else 4 * turns + 8,
                metadata={"intercode": {"env": env, "dataset": dataset, "strategy": strategy,
                                        "turns": turns, "sql_backend": sql_backend,
                                        "network": network, "sandbox": sandbox,
                                        "skipped": {str(k): v for k, v in skipped.items()}}})


@task(name="bash")
def bash(dataset: str = "nl2bash", strategy: str = "try_again", turns: int = 10,
         tasks: str | int | list[int] | None = None, sandbox: str = "bwrap") -> Task:
    """InterCode-Bash (NL2Bash on prepared file systems)."""
    return intercode_task("bash", dataset, strategy, turns, tasks, sandbox=sandbox)


@task(name="sql")
def sql(dataset: str = "spider-dev", strategy: str = "try_again", turns: int = 10,
        tasks: str | int | list[int] | None = None, backend: str = "sqlite",
        sandbox: str = "bwrap") -> Task:
    """InterCode-SQL (Spider dev; ``backend``: sqlite or mysql)."""
    return intercode_task("sql", dataset, strategy, turns, tasks, sql_backend=backend,
                          sandbox=sandbox)


@task(name="python")
def python(dataset: str = "mbpp", strategy: str = "try_again", turns: int = 10,
           tasks: str | int | list[int] | None = None, sandbox: str = "bwrap") -> Task:
    """InterCode-Python (MBPP)."""
    return intercode_task("python", dataset, strategy, turns, tasks, sandbox=sandbox)


@task(name="ctf")
def ctf(dataset: str = "intercode-ctf", strategy: str = "try_again", turns: int = 10,
        tasks: str | int | list[int] | None = None, network: bool = False,
        sandbox: str = "bwrap") -> Task:
    """InterCode-CTF (picoCTF); tasks that need the network are left out without it."""
    return intercode_task("ctf", dataset, strategy, turns, tasks, network=network,
                          sandbox=sandbox)


@task(name="swe")
def swe(dataset: str = "swe-demo", strategy: str = "react", turns: int = 30,
        tasks: str | int | list[int] | None = None, sandbox: str = "bwrap") -> Task:
    """IC-SWE-bench: fix a repository's issue; its tests decide (``dataset``: swe-demo,
    ic-swe-bench or a file of SWE-bench instances; ``$INTERCODE_REPO_MIRROR`` for local
    clones)."""
    return intercode_task("swe", dataset, strategy, turns, tasks, sandbox=sandbox)
