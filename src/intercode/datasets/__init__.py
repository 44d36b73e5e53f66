"""Datasets: pinned upstream data, task loaders and prepared file systems."""

from intercode.datasets.ctf import CtfTask
from intercode.datasets.mbpp import PythonTask
from intercode.datasets.registry import dataset_names, load_dataset
from intercode.datasets.spider import SqlTask
from intercode.datasets.tasks import BashTask, Dataset, Task

__all__ = ["BashTask", "CtfTask", "Dataset", "PythonTask", "SqlTask", "Task", "dataset_names",
           "load_dataset"]
