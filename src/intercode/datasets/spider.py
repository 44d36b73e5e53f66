"""The SQL dataset: Spider dev as InterCode published it (1034 tasks, 20 databases)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from intercode.datafiles import REVISION
from intercode.datasets.nl2bash import read_json
from intercode.datasets.tasks import Dataset, Task
from intercode.errors import DatasetError
from intercode.fetch import data_file

__all__ = ["SqlTask", "load", "task_list"]


@dataclass(frozen=True)
class SqlTask(Task):
    """A SQL task runs on one database; ``hardness`` is its dataset's difficulty.

    ``dump``: the data file key of the MySQL dump its database comes from (empty:
    Spider's). ``metric``: the execution metric that is its reward (empty: InterCode's
    reward; ``wikisql`` or ``bird``: that benchmark's execution accuracy, see
    :mod:`intercode.rewards.execution`). Tasks of a user dataset also name the database's
    file (``database_path``, absolute, and its ``database_sha256`` when loaded); ``db``
    is its logical name.
    """

    db: str = ""
    hardness: str = ""
    database_path: str = ""
    database_sha256: str = ""
    dump: str = ""
    metric: str = ""

    @property
    def category(self) -> str | None:
        """The difficulty (Spider's easy, medium, hard, extra; BIRD's simple, moderate,
        challenging)."""
        return self.hardness or None


def load(name: str) -> Dataset:
    """``spider-dev``: every task of ``ic_spider_dev.json``, in its order."""
    path = data_file("spider_dev")
    tasks = []
    for i, fields in enumerate(task_list(path, name, ("query", "gold", "db", "hardness"))):
        tasks.append(SqlTask(index=i, query=fields["query"], gold=fields["gold"], dataset=name,
                             source=name, source_index=i, db=fields["db"],
                             hardness=fields["hardness"]))
    return Dataset(name, "sql", tuple(tasks), REVISION, "Spider dev, as in InterCode")


def task_list(path: Path, name: str, keys: tuple[str, ...],
              optional: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """The tasks of a JSON task file: each a non-empty string for every key of ``keys``,
    a string (possibly empty) for each of ``optional``; a one-line error otherwise."""
    raw = read_json(path, name)
    if not isinstance(raw, list):
        raise DatasetError(f"{path.name}: expected a JSON list of tasks")
    tasks = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise DatasetError(f"{path.name}: task {i} is not an object")
        fields: dict[str, str] = {}
        for key in keys:
            value = item.get(key)
            if not isinstance(value, str) or not value.strip():
                raise DatasetError(f"{path.name}: task {i} has no {key!r} string")
            fields[key] = value
        for key in optional:
            value = item.get(key, "")
            if not isinstance(value, str):
                raise DatasetError(f"{path.name}: task {i}: {key!r} is not a string")
            fields[key] = value
        tasks.append(fields)
    return tasks
