"""The Bash datasets: NL2Bash on four file systems, the small test set, a demo."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from intercode.datafiles import REVISION
from intercode.datasets.tasks import BashTask, Dataset
from intercode.errors import DatasetError
from intercode.fetch import data_file

__all__ = ["load", "read_json"]

# name -> (task file key, file system name)
SOURCES: dict[str, tuple[str, str]] = {
    "nl2bash-fs1": ("nl2bash_fs_1", "nl2bash-fs1"),
    "nl2bash-fs2": ("nl2bash_fs_2", "nl2bash-fs2"),
    "nl2bash-fs3": ("nl2bash_fs_3", "nl2bash-fs3"),
    "nl2bash-fs4": ("nl2bash_fs_4", "nl2bash-fs4"),
    "bash-test": ("bash_test_queries", "bash-test"),
}
NL2BASH_ALL = ("nl2bash-fs1", "nl2bash-fs2", "nl2bash-fs3", "nl2bash-fs4")
DEMO = "bash-demo"


def parse_tasks(raw: Any, where: str) -> list[tuple[str, str]]:
    """Validate a task file's JSON (a list of ``{query, gold}``); return the pairs."""
    if not isinstance(raw, list):
        raise DatasetError(f"{where}: expected a JSON list of tasks, got {type(raw).__name__}")
    pairs = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: task {i} is not an object")
        query, gold = item.get("query"), item.get("gold")
        if isinstance(gold, list) and all(isinstance(g, str) for g in gold):
            gold = ";".join(gold)
        if not isinstance(query, str) or not query.strip():
            raise DatasetError(f"{where}: task {i} has no 'query' string")
        if not isinstance(gold, str) or not gold.strip():
            raise DatasetError(f"{where}: task {i} has no 'gold' string")
        pairs.append((query, gold))
    return pairs


def read_json(path: Path, where: str) -> Any:
    """Parse a JSON file, with a clear error if it is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{where}: cannot read JSON from {path}: {exc}") from exc


def load(name: str) -> Dataset:
    """Load one of the Bash datasets by name."""
    if name == "nl2bash":
        tasks: list[BashTask] = []
        for part in NL2BASH_ALL:
            for t in load(part).tasks:
                tasks.append(_task(len(tasks), t.query, t.gold, name, part, t.source_index,
                                   part))
        return Dataset(name, "bash", tuple(tasks), REVISION,
                       "all 200 NL2Bash tasks (fs1, fs2, fs3, fs4 in that order)")
    if name == DEMO:
        text = resources.files("intercode.datasets.data").joinpath("bash_demo.json")
        raw = json.loads(text.read_text(encoding="utf-8"))
        pairs = parse_tasks(raw, "bash_demo.json")
        tasks = [_task(i, q, g, name, name, i, DEMO) for i, (q, g) in enumerate(pairs)]
        return Dataset(name, "bash", tuple(tasks), "embedded", "a small embedded demo")
    key, fs = SOURCES[name]
    path = data_file(key)
    pairs = parse_tasks(read_json(path, name), f"{name} ({path.name})")
    tasks = [_task(i, q, g, name, name, i, fs) for i, (q, g) in enumerate(pairs)]
    return Dataset(name, "bash", tuple(tasks), REVISION, f"NL2Bash tasks from {path.name}")


def _task(index: int, query: str, gold: str, dataset: str, source: str, source_index: int,
          fs: str) -> BashTask:
    return BashTask(index=index, query=query, gold=gold, dataset=dataset, source=source,
                    source_index=source_index, fs=fs)
