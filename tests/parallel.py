"""The units of work of a parallel run of the suite (pytest-xdist, ``-n N``: scripts/test).

Each test belongs to one group; a worker process runs the tests of a group one after
another, and takes a new group when it is done (the longest groups first). A test that uses
a resource only one process may hold at a time is in that resource's group:

* ray: tests/ray drive one Ray cluster from one process (tests/ray/conftest.py), which
  the rest of the suite must not run as the driver of;
* mysql: the tests of the MySQL server share its accounts and databases: a backend that
  starts drops the databases of every run whose lock is free, which races with a test that
  sets up a dead run to see its own backend drop it;
* browser: one headless Chromium (the session's ``browser`` fixture).

Every other test is in its module's group, so that a module's fixtures are made once.

pytest-xdist's own ``--dist loadgroup`` (``xdist_group`` marks) cannot carry these groups
on pytest 9.2: it appends the group to the test's id, which pytest 9.2 no longer lets a
plugin change, so the marks are silently ignored (pytest-dev/pytest-xdist#1386). Here the
workers write each test's group into a file instead (:func:`write_groups`) and the
scheduler (:func:`make_scheduler`) reads it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

SHARED_GROUPS = ("ray", "mysql", "browser")
MARK = "parallel_group"  # the group a test is in (read by tests/unit/test_markers.py)
INPUT = "intercode_groups"  # the workers' input naming the folder of the group files


def group_for(item: pytest.Item, markers: set[str], root: Path) -> str:
    """The group of a test that has ``markers`` (tests/conftest.py: MARKERS)."""
    for shared in SHARED_GROUPS:
        if shared in markers:
            return shared
    path = Path(item.path).resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name


def group_of(item: pytest.Item) -> str:
    return str(next(item.iter_markers(MARK)).args[0])


def in_worker(config: pytest.Config) -> bool:
    """Whether this process is a worker of a parallel run."""
    return hasattr(config, "workerinput")


def run_order(item: pytest.Item) -> int:
    """Sort key of a worker's tests, whose order is the order the groups are handed out:
    the longest groups first, so that none is left to run alone at the end: the lint
    checks (mypy, the slowest test), then the shared resources', then the modules in the
    usual order (the adversarial ones, the slowest, first; the unit tests, many and short,
    last). Every worker sorts the same collection the same way."""
    if any(item.iter_markers("lint")):
        return 0
    return 1 if group_of(item) in SHARED_GROUPS else 2


def write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A worker's groups of its collected tests, for the scheduler."""
    folder = Path(config.workerinput[INPUT])  # type: ignore[attr-defined]
    worker = config.workerinput["workerid"]  # type: ignore[attr-defined]
    groups = {item.nodeid: group_of(item) for item in items}
    tmp = folder / f".{worker}.tmp"
    tmp.write_text(json.dumps(groups))
    os.replace(tmp, folder / f"{worker}.json")


def configure_node(config: pytest.Config, node: Any) -> None:
    """Tell a worker where to write its groups (a folder of this run, made once)."""
    folder = getattr(config, "_intercode_groups", None)
    if folder is None:
        folder = tempfile.mkdtemp(prefix="intercode-test-groups-")
        config._intercode_groups = folder  # type: ignore[attr-defined]
    node.workerinput[INPUT] = folder


def remove_groups(config: pytest.Config) -> None:
    import shutil

    folder = getattr(config, "_intercode_groups", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scheduler by whole scopes, the scopes being these groups, handed out
    in the order the workers collected them (see :func:`run_order`)."""
    from xdist.scheduler import LoadScopeScheduling

    if config.getvalue("dist") == "each":
        return None  # every test on every worker: no groups to hand out
    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                folder = Path(config._intercode_groups)  # type: ignore[attr-defined]
                files = sorted(folder.glob("*.json"))
                if not files:
                    raise RuntimeError(f"no worker wrote the tests' groups into {folder}")
                self.groups = json.loads(files[0].read_text())
            try:
                return self.groups[nodeid]
            except KeyError:
                raise RuntimeError(f"{nodeid}: no group (tests/parallel.py)") from None

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)
