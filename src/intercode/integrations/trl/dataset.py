"""The training set TRL reads: one row per task of a dataset (or view).

Each row holds the conversational ``prompt`` (the native tool-calling agent's system
message and the task in its wording) and what :meth:`IntercodeTrlEnv.reset` needs:
``benchmark``, ``dataset`` and ``task`` (the task's index). Tasks the environment cannot
run as configured (e.g. a CTF task whose files are missing) are left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from intercode.agents import prompts
from intercode.benchmarks import get

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = ["training_dataset", "training_rows"]


def training_rows(benchmark: str, dataset: str, *, environment: str | None = None,
                  **env_kwargs: Any) -> list[dict[str, Any]]:
    """The rows of ``dataset``'s runnable tasks, in task order (``env_kwargs``: the
    environment's arguments, as :func:`~intercode.integrations.trl.environment_class`
    takes them, where they decide which tasks can run).

    ``environment``: also an ``environment`` column with this name, the key of a
    ``dict`` ``environment_factory`` (TRL routes each row to its environment with it).
    """
    from intercode.datasets import load_dataset

    spec = get(benchmark)
    name = spec.name
    tasks = load_dataset(dataset, name)
    env_class = spec.env_class()
    probe = env_class(tasks, **env_kwargs)  # only its task checks are used: no sandbox starts here
    try:
        runnable = probe.available_tasks()
    finally:
        probe.close()
    system = prompts.tools_system(name, False)
    rows = []
    for index in runnable:
        row: dict[str, Any] = {
            "prompt": [{"role": "system", "content": system},
                       {"role": "user", "content": prompts.tools_task(tasks[index].query)}],
            "benchmark": name, "dataset": dataset, "task": index}
        if environment is not None:
            row["environment"] = environment
        rows.append(row)
    return rows


def training_dataset(benchmark: str, dataset: str, *, environment: str | None = None,
                     **env_kwargs: Any) -> Dataset:
    """:func:`training_rows` as a ``datasets.Dataset`` (the ``trl`` extra brings it)."""
    from datasets import Dataset

    return Dataset.from_list(training_rows(benchmark, dataset, environment=environment,
                                          **env_kwargs))
