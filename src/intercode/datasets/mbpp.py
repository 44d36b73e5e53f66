"""The Python dataset: MBPP (974 tasks) and its standard splits, as InterCode published it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from intercode.datafiles import REVISION
from intercode.datasets.nl2bash import read_json
from intercode.datasets.tasks import Dataset, Task
from intercode.errors import DatasetError
from intercode.fetch import data_file

__all__ = ["PythonTask", "load"]

# dataset name -> inclusive range of MBPP task_id
SPLITS = {"mbpp": (1, 974), "mbpp-prompt": (1, 10), "mbpp-test": (11, 510),
          "mbpp-validation": (511, 600), "mbpp-train": (601, 974)}
# upstream used r"def (\w+)\(", which misses `def f (x):` (six golds); allow the space
_DEF = re.compile(r"def\s+(\w+)\s*\(")


@dataclass(frozen=True)
class PythonTask(Task):
    """An MBPP task: write a function that passes ``tests``.

    ``entry_point`` is the name upstream bound the submitted function to: the first
    function the gold defines.
    """

    tests: tuple[str, ...] = ()
    test_setup_code: str = ""
    task_id: int = 0
    entry_point: str = ""


def load(name: str) -> Dataset:
    """One of the MBPP datasets, in the file's order."""
    first, last = SPLITS[name]
    path = data_file("mbpp")
    raw = read_json(path, name)
    if not isinstance(raw, list):
        raise DatasetError(f"{path.name}: expected a JSON list of tasks")
    tasks: list[Task] = []
    for position, item in enumerate(raw):
        task = _task(item, position, path.name)
        if first <= task.task_id <= last:
            tasks.append(PythonTask(index=len(tasks), query=task.query, gold=task.gold,
                                    dataset=name, source="mbpp", source_index=position,
                                    tests=task.tests, test_setup_code=task.test_setup_code,
                                    task_id=task.task_id, entry_point=task.entry_point))
    return Dataset(name, "python", tuple(tasks), REVISION,
                   f"MBPP task_ids {first}-{last}, as in InterCode")


def _task(item: object, position: int, where: str) -> PythonTask:
    if not isinstance(item, dict):
        raise DatasetError(f"{where}: task {position} is not an object")
    query, gold, tests = item.get("query"), item.get("gold"), item.get("tests")
    setup, task_id = item.get("test_setup_code", ""), item.get("task_id")
    if not isinstance(query, str) or not isinstance(gold, str) or not gold.strip():
        raise DatasetError(f"{where}: task {position} needs 'query' and 'gold' strings")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise DatasetError(f"{where}: task {position} needs a list of test strings")
    if not isinstance(setup, str) or not isinstance(task_id, int):
        raise DatasetError(f"{where}: task {position} has a bad test_setup_code or task_id")
    m = _DEF.search(gold)
    if m is None:
        raise DatasetError(f"{where}: the gold of task {position} defines no function")
    return PythonTask(index=position, query=query, gold=gold, dataset="mbpp", source="mbpp",
                      source_index=position, tests=tuple(tests), test_setup_code=setup,
                      task_id=task_id, entry_point=m.group(1))
