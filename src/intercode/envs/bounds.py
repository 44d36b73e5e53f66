"""Bounds every environment shares, and the task-index check, without Gymnasium.

The run's main process (which only hands task indices to workers) and the LLM agents use
these; importing :mod:`intercode.envs.base` for them would load Gymnasium and numpy there.
"""

from __future__ import annotations

import operator
import sys
from typing import Any

from intercode.errors import ConfigError

__all__ = ["MAX_ACTION", "MAX_OBSERVATION", "NOTE_CHARS", "task_index"]

#: The longest action an environment takes (characters).
MAX_ACTION = 1 << 20
#: The observation bound of an environment that sets none (see ``_limit_observations``).
MAX_OBSERVATION = 1 << 24
#: Characters an environment may add to an action's bounded output (its notes).
NOTE_CHARS = 1 << 16


def _is_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    numpy = sys.modules.get("numpy")  # a numpy bool exists only once numpy is loaded
    return numpy is not None and isinstance(value, numpy.bool_)


def task_index(value: Any, count: int) -> int:
    """A task index as a plain ``int`` (any integral type, e.g. numpy's ``int64``; never
    a bool), checked against the dataset size."""
    try:
        index = operator.index(value) if not _is_bool(value) else None
    except TypeError:
        index = None
    if index is None or not 0 <= index < count:
        raise ConfigError(f"task must be an integer in [0, {count}), got {value!r}")
    return index
