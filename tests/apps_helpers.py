"""APPS-format problems the tests make (``ic_apps.json`` is not in the local mirror)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from intercode.datasets.apps import task
from intercode.datasets.tasks import Dataset

STDIN_GOLD = "a, b = map(int, input().split())\nprint(a + b)\n"
CALL_GOLD = "def add(a, b):\n    return a + b\n"
CLASS_GOLD = "class Solution:\n    def pair(self, a, b):\n        return (a, b)\n"

PROBLEMS: list[dict[str, Any]] = [
    {"query": "Print the sum of two integers.", "gold": STDIN_GOLD,
     "input_output": {"inputs": ["1 2\n", "3 4\n", "10 -3\n", ["20 20", ""]],
                      "outputs": ["3\n", "7\n", "7", ["40"]]},
     "meta": {"difficulty": "introductory", "url": "https://example.invalid/1"}},
    {"query": "Return the sum of a and b.", "gold": CALL_GOLD,
     "input_output": {"inputs": [[1, 2], [3, 4], [0.5, 0.25]], "outputs": [[3], [7], [0.75]],
                      "fn_name": "add"},
     "meta": {"difficulty": "interview"}},
    {"query": "Return a and b as a pair.", "gold": CLASS_GOLD,
     "input_output": {"inputs": [[1, 2], ["x", [3]]], "outputs": [[[1, 2]], [["x", [3]]]],
                      "fn_name": "pair"},
     "meta": {"difficulty": "competition"}},
    # expected outputs with loose whitespace and floats, as APPS's files have them
    {"query": "Print a third of n, then n and n + 1.", "gold":
        "n = int(input())\nprint('%.9f' % (n / 3))\nprint(n, n + 1)\n",
     "input_output": {"inputs": ["3\n", "1\n"], "outputs": ["1.0000000001\n3 4\n",
                                                          "  0.333333333\n1  2"]},
     "meta": {"difficulty": "interview"}},
]


def dataset(problems: list[dict[str, Any]] | None = None, name: str = "apps") -> Dataset:
    """The problems as a dataset of the Python environment."""
    items = PROBLEMS if problems is None else problems
    tasks = tuple(task(item, k, "test-made", name) for k, item in enumerate(items))
    return Dataset(name, "python", tasks, "test", "test-made APPS problems")


def write_file(path: Path, problems: list[dict[str, Any]] | None = None) -> bytes:
    """Write the problems as an ``ic_apps.json``; its bytes."""
    data = json.dumps(PROBLEMS if problems is None else problems).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data
