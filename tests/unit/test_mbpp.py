"""MBPP loading: splits, entry points, malformed files."""

from __future__ import annotations

import pytest

from intercode.datasets import load_dataset, mbpp
from intercode.errors import DatasetError


@pytest.mark.parametrize(("name", "count", "first", "last"), [
    ("mbpp", 974, 1, 974), ("mbpp-prompt", 10, 1, 10), ("mbpp-test", 500, 11, 510),
    ("mbpp-validation", 90, 511, 600), ("mbpp-train", 374, 601, 974)])
def test_splits(name, count, first, last):
    ds = load_dataset(name)
    assert len(ds) == count and ds.env == "python"
    assert [t.task_id for t in ds] == list(range(first, last + 1))
    assert [t.index for t in ds] == list(range(count))
    assert ds[0].source == "mbpp" and ds[0].source_index == first - 1


def test_entry_point_is_the_golds_first_function():
    ds = load_dataset("mbpp")
    assert ds[0].entry_point == "min_cost"
    assert ds[31].entry_point == "max_Prime_Factors"  # `def max_Prime_Factors (n):`


@pytest.mark.parametrize(("item", "message"), [
    ("text", "not an object"),
    ({"query": "q", "gold": "x = 1", "tests": ["assert 1"], "task_id": 1}, "defines no function"),
    ({"query": "q", "gold": "def f():\n pass", "tests": [], "task_id": 1}, "list of test"),
    ({"query": "q", "gold": "def f():\n pass", "tests": ["t"], "task_id": "1"}, "task_id"),
    ({"gold": "def f():\n pass", "tests": ["t"], "task_id": 1}, "'query' and 'gold'"),
])
def test_malformed_tasks(item, message):
    with pytest.raises(DatasetError, match=message):
        mbpp._task(item, 7, "file.json")
