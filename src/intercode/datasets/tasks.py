"""Tasks and datasets."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["BashTask", "Dataset", "Task"]


@dataclass(frozen=True)
class Task:
    """One task: a natural-language query and its gold solution.

    ``index`` is the 0-based position in its dataset, in the upstream file's order;
    ``source`` / ``source_index`` name the upstream file and position it came from.
    """

    index: int
    query: str
    gold: str
    dataset: str
    source: str
    source_index: int

    @property
    def category(self) -> str | None:
        """The group a summary breaks results down by (SQL hardness, CTF category, ...)."""
        return None


@dataclass(frozen=True)
class BashTask(Task):
    """A Bash task runs on a prepared file system (``fs`` names it).

    Tasks of a user dataset name their setup script instead: ``setup_path`` (absolute)
    and ``setup_sha256`` (its content when loaded); ``fs`` is then the script's path as
    the dataset wrote it. A task with neither starts from an empty tree.
    """

    fs: str = ""
    setup_path: str = ""
    setup_sha256: str = ""

    @property
    def category(self) -> str | None:
        """The file system."""
        return self.fs or None


@dataclass(frozen=True)
class Dataset:
    """An ordered, immutable collection of tasks for one environment."""

    name: str
    env: str
    tasks: tuple[Task, ...]
    revision: str
    description: str = ""

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, index: int) -> Task:
        return self.tasks[index]

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)
