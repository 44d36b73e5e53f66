"""The test modules' file names are unique across folders: the folders are not packages,
so pytest imports each module by its base name and a second module of the same name
fails to collect ("import file mismatch") in a run that collects both."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_name() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if "node_modules" not in path.parts:
            seen[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in seen.items()
              if len(paths) > 1 and name not in ("__init__.py", "conftest.py")}
    assert shared == {}
