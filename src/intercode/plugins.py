"""Installed plugins' entry points, read once per process.

Reading them walks the metadata of every installed distribution (tens of milliseconds in
a large environment); the benchmark registry, Gymnasium's ids and the sandbox backends
each need a group, so one walk serves them all. A plugin installed while a process runs
is seen by the next process.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["entry_points_of"]


@lru_cache(maxsize=1)
def _all() -> Any:  # EntryPoints (3.12 on) or SelectableGroups (3.11): both select()
    from importlib.metadata import entry_points  # slow to import: only when asked

    return entry_points()


def entry_points_of(group: str) -> tuple[EntryPoint, ...]:
    """The installed entry points of ``group``."""
    return tuple(_all().select(group=group))
