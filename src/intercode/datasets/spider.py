"""The SQL dataset: Spider dev as InterCode published it (1034 tasks, 20 databases)."""

from __future__ import annotations

from dataclasses import dataclass

from intercode.datafiles import REVISION
from intercode.datasets.nl2bash import read_json
from intercode.datasets.tasks import Dataset, Task
from intercode.errors import DatasetError
from intercode.fetch import data_file

__all__ = ["SqlTask", "load"]


@dataclass(frozen=True)
class SqlTask(Task):
    """A SQL task runs on one database; ``hardness`` is Spider's difficulty.

    Tasks of a user dataset also name the database's file (``database_path``,
    absolute, and its ``database_sha256`` when loaded); ``db`` is its logical name.
    """

    db: str = ""
    hardness: str = ""
    database_path: str = ""
    database_sha256: str = ""

    @property
    def category(self) -> str | None:
        """Spider's hardness (easy, medium, hard, extra)."""
        return self.hardness or None


def load(name: str) -> Dataset:
    """``spider-dev``: every task of ``ic_spider_dev.json``, in its order."""
    path = data_file("spider_dev")
    raw = read_json(path, name)
    if not isinstance(raw, list):
        raise DatasetError(f"{path.name}: expected a JSON list of tasks")
    tasks = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise DatasetError(f"{path.name}: task {i} is not an object")
        fields: dict[str, str] = {}
        for key in ("query", "gold", "db", "hardness"):
            value = item.get(key)
            if not isinstance(value, str) or not value.strip():
                raise DatasetError(f"{path.name}: task {i} has no {key!r} string")
            fields[key] = value
        tasks.append(SqlTask(index=i, query=fields["query"], gold=fields["gold"], dataset=name,
                             source=name, source_index=i, db=fields["db"],
                             hardness=fields["hardness"]))
    return Dataset(name, "sql", tuple(tasks), REVISION, "Spider dev, as in InterCode")
