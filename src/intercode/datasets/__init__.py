"""Datasets: pinned upstream data, task loaders and prepared file systems.

Each name is imported on first use (a task class alone must not load every loader)."""

from typing import TYPE_CHECKING

from intercode.lazy import lazy_exports

if TYPE_CHECKING:
    from intercode.datasets.ctf import CtfTask
    from intercode.datasets.mbpp import PythonTask
    from intercode.datasets.registry import dataset_names, load_dataset
    from intercode.datasets.spider import SqlTask
    from intercode.datasets.tasks import BashTask, Dataset, Task

__all__ = ["BashTask", "CtfTask", "Dataset", "PythonTask", "SqlTask", "Task", "dataset_names",
           "load_dataset"]

__getattr__, __dir__ = lazy_exports(globals(), {
    "intercode.datasets.ctf": ("CtfTask",),
    "intercode.datasets.mbpp": ("PythonTask",),
    "intercode.datasets.registry": ("dataset_names", "load_dataset"),
    "intercode.datasets.spider": ("SqlTask",),
    "intercode.datasets.tasks": ("BashTask", "Dataset", "Task"),
})
