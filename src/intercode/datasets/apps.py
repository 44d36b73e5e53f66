"""The APPS dataset: programming problems with input/output tests, as InterCode built it.

Upstream's ``data/python/apps/transform.py`` keeps APPS's test problems that have a
question, solutions and tests, with one solution drawn at random as the gold:
``{"query", "gold", "input_output": {"inputs", "outputs", "fn_name"?}, "meta"?:
{"difficulty", "url"}}``. The file committed upstream may be a subset of the 3765 problems
(its README says so); every problem in it is loaded, whatever their count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from intercode.benchmarks.python import APPS_PROGRAM as DEFAULT_PROGRAM
from intercode.benchmarks.python import APPS_SOURCE
from intercode.datafiles import REVISION
from intercode.datasets.mbpp import PythonTask
from intercode.datasets.nl2bash import read_json
from intercode.datasets.tasks import Dataset, Task
from intercode.errors import DatasetError
from intercode.fetch import data_file

__all__ = ["DEFAULT_PROGRAM", "AppsTask", "load"]

DIFFICULTIES = ("introductory", "interview", "competition")

STDIN_NOTE = (
    "\n\nWrite a Python 3 program that reads the input from standard input and prints the "
    "answer to standard output. Save it to the file {program} (in the interpreter's "
    "working directory) and hand it in with `submit` (or `submit <path>`): hidden tests "
    "run it, each with its own input and time limit.")
CALL_NOTE = (
    "\n\nWrite Python 3 code that defines the function `{fn_name}` (or a class `Solution` "
    "with a method `{fn_name}`). Save it to the file {program} (in the interpreter's "
    "working directory) and hand it in with `submit` (or `submit <path>`): hidden tests "
    "call `{fn_name}` with their arguments and compare what it returns.")


@dataclass(frozen=True)
class AppsTask(PythonTask):
    """An APPS problem: a program judged by input/output tests.

    ``inputs`` and ``outputs`` are the tests as the file stores them (JSON text each, so
    that the task stays hashable); ``fn_name`` is set for a call-based problem (the
    function called with each input's arguments), empty for a standard-input one.
    ``difficulty`` is APPS's (introductory, interview, competition).
    """

    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    fn_name: str = ""
    difficulty: str = ""

    @property
    def category(self) -> str | None:
        """The difficulty."""
        return self.difficulty or None

    def test_input(self, k: int) -> Any:
        """Test ``k``'s input: a string (standard input) or the call's arguments."""
        value = json.loads(self.inputs[k])
        if not self.fn_name and isinstance(value, list):
            return "\n".join(str(x) for x in value)  # as APPS joins a list of lines
        return value

    def test_output(self, k: int) -> Any:
        """Test ``k``'s expected output, as the file stores it."""
        return json.loads(self.outputs[k])


def load(name: str) -> Dataset:
    """The problems of ``ic_apps.json``, in the file's order."""
    path = data_file("apps")
    raw = read_json(path, name)
    if not isinstance(raw, list) or not raw:
        raise DatasetError(f"{path.name}: expected a non-empty JSON list of problems")
    tasks = tuple(task(item, position, path.name, name) for position, item in enumerate(raw))
    return Dataset(name, "python", tasks, REVISION,
                   f"APPS test problems, as in InterCode ({len(tasks)} in the file)")


def task(item: object, position: int, where: str, dataset: str = "apps") -> AppsTask:
    """One problem of the file (a clear :class:`DatasetError` if it is malformed)."""
    if not isinstance(item, dict):
        raise DatasetError(f"{where}: problem {position} is not an object")
    query, gold, tests = item.get("query"), item.get("gold"), item.get("input_output")
    if not isinstance(query, str) or not isinstance(gold, str) or not gold.strip():
        raise DatasetError(f"{where}: problem {position} needs 'query' and 'gold' strings")
    if not isinstance(tests, dict):
        raise DatasetError(f"{where}: problem {position} needs an 'input_output' object")
    inputs, outputs, fn_name = tests.get("inputs"), tests.get("outputs"), tests.get("fn_name")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or not inputs \
            or len(inputs) != len(outputs):
        raise DatasetError(f"{where}: problem {position} needs as many 'inputs' as "
                           "'outputs' (at least one)")
    if fn_name is not None and not (isinstance(fn_name, str) and fn_name.isidentifier()):
        raise DatasetError(f"{where}: problem {position} has a bad 'fn_name'")
    if fn_name is None and not all(isinstance(x, str | list) for x in inputs):
        raise DatasetError(f"{where}: problem {position}: a standard-input test's input "
                           "must be text (or a list of lines)")
    meta = item.get("meta")
    difficulty = meta.get("difficulty") if isinstance(meta, dict) else None
    difficulty = difficulty if difficulty in DIFFICULTIES else ""
    note = CALL_NOTE if fn_name else STDIN_NOTE
    full_query = query.rstrip() + note.format(fn_name=fn_name, program=DEFAULT_PROGRAM)
    try:
        dumped_in = tuple(json.dumps(x) for x in inputs)
        dumped_out = tuple(json.dumps(x) for x in outputs)
    except (TypeError, ValueError, RecursionError) as exc:  # pragma: no cover - from JSON
        raise DatasetError(f"{where}: problem {position}: {exc}") from exc
    return AppsTask(index=position, query=full_query, gold=gold, dataset=dataset,
                    source=APPS_SOURCE, source_index=position, inputs=dumped_in,
                    outputs=dumped_out, fn_name=fn_name or "", difficulty=difficulty,
                    entry_point=fn_name or "")


def is_apps(task: Task | None) -> bool:
    """Whether ``task`` is an APPS problem."""
    return isinstance(task, AppsTask)
