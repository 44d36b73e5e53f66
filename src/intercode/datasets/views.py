"""Named views of a dataset for training: without its known-issue tasks, and seeded
train/test splits that never overlap.

A view is the dataset's name with words after colons: ``nl2bash:clean`` (without the
tasks the known-issue list names), ``nl2bash:train`` and ``nl2bash:test`` (a split,
80 % / 20 % by default), ``seed=N`` and ``frac=F`` to choose another split, in any
combination (``nl2bash:clean:train:seed=3``). It works wherever a dataset name does: the
command line, ``intercode.make``, the runner, the servers.

A task's side of a split is a function of the seed and of the task's source and position
(a hash), never of the other tasks: ``train`` and ``test`` of one seed never share a
task, a task keeps its side when others are added or removed (``clean`` first, then
``train``: the same sides), and every machine makes the same split. The view's tasks are
numbered 0, 1, ... again; ``source`` and ``source_index`` still name the original.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

from intercode.datasets.tasks import Dataset
from intercode.errors import ConfigError

__all__ = ["is_view", "parse_view", "view"]

WORD = re.compile(r"^(clean|train|test|seed=\d{1,9}|frac=(0?\.\d{1,6}|0|1(\.0*)?))$")
DEFAULT_FRACTION = 0.8


def is_view(name: str) -> bool:
    """Whether ``name`` asks for a view (``base:word...``) rather than a dataset."""
    return ":" in name and "/" not in name and not name.endswith((".json", ".jsonl"))


def parse_view(name: str) -> tuple[str, dict[str, object]]:
    """``(base dataset, options of view())`` of a view name (one-line error if bad)."""
    base, *words = name.split(":")
    options: dict[str, object] = {"clean": False, "split": None,
                                  "fraction": DEFAULT_FRACTION, "seed": 0}
    if not base or not words:
        raise ConfigError(f"not a dataset view: {name!r} (e.g. nl2bash:clean, nl2bash:train)")
    for word in words:
        if not WORD.match(word):
            raise ConfigError(f"{name}: unknown view word {word!r}; known: clean, train, test, "
                              "seed=N, frac=F")
        if word == "clean":
            options["clean"] = True
        elif word in ("train", "test"):
            if options["split"] not in (None, word):
                raise ConfigError(f"{name}: a view is the train or the test side, not both")
            options["split"] = word
        elif word.startswith("seed="):
            options["seed"] = int(word[5:])
        else:
            options["fraction"] = float(word[5:])
    if options["split"] is None and (options["seed"] != 0
                                     or options["fraction"] != DEFAULT_FRACTION):
        raise ConfigError(f"{name}: seed= and frac= choose a split: add train or test")
    return base, options


def view(dataset: Dataset, name: str, *, clean: bool = False, split: str | None = None,
         fraction: float = DEFAULT_FRACTION, seed: int = 0) -> Dataset:
    """The tasks of ``dataset`` the view keeps, renumbered, as a dataset called ``name``."""
    tasks = list(dataset.tasks)
    dropped = ""
    if clean:
        from intercode.datasets.issue_table import issue_of

        before = len(tasks)
        tasks = [t for t in tasks if issue_of(t.source, t.source_index) is None]
        dropped = f", {before - len(tasks)} known-issue tasks left out"
    if split is not None:
        if not 0.0 <= fraction <= 1.0:
            raise ConfigError(f"frac must be between 0 and 1, not {fraction}")
        tasks = [t for t in tasks if (_side(t.source, t.source_index, seed) < fraction)
                 == (split == "train")]
    if not tasks:
        raise ConfigError(f"the view {name} has no task")
    kept = tuple(dataclasses.replace(t, index=i, dataset=name) for i, t in enumerate(tasks))
    described = f"{dataset.description or dataset.name} (view: {name}{dropped})"
    revision = hashlib.sha256(f"{dataset.revision}:{name}".encode()).hexdigest()
    return Dataset(name, dataset.env, kept, revision, described)


def _side(source: str, position: int, seed: int) -> float:
    """Where a task falls in [0, 1) for a seed (a hash of the seed and the task)."""
    digest = hashlib.sha256(f"{seed}\0{source}\0{position}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
