"""The table of tasks whose gold is broken, or whose result depends on the host or the time.

The list lives in ``data/known_issues.json`` keyed by the upstream source file and
index, with a kind (``broken_gold``, ``host_dependent``, ``time_dependent``,
``nondeterministic``, ``network``) and a reason; ``intercode validate`` checks it
and reports print it. Its ``_upstream`` section says, by source and index, why
upstream's result of a task (recorded, or its environment rebuilt and run on the same
actions) is not what this environment gives with ``--upstream-quirks`` (the machine,
the clock, the times of the resets of upstream's long-lived containers):
``perf/fidelity_bash.py`` prints it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["KINDS", "KnownIssue", "all_issues", "issue_of", "upstream_causes"]

KINDS = ("broken_gold", "host_dependent", "time_dependent", "nondeterministic", "network")


@dataclass(frozen=True)
class KnownIssue:
    """Why a task cannot be trusted (or scores 1.0 for the wrong reason)."""

    source: str
    source_index: int
    kind: str
    reason: str
    gold_scores_one: bool | None


def all_issues() -> dict[tuple[str, int], KnownIssue]:
    """Every known issue, by (upstream source file, index)."""
    return _all()


@lru_cache(maxsize=1)
def _raw() -> dict[str, Any]:
    text = resources.files("intercode.datasets.data").joinpath("known_issues.json")
    raw: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return raw


def upstream_causes(source: str) -> dict[int, str]:
    """Why upstream's recorded results of ``source``'s tasks differ from
    ``--upstream-quirks`` runs here, by index (the ``_upstream`` section)."""
    return {int(index): reason for index, reason in _raw()["_upstream"].get(source, {}).items()}


@lru_cache(maxsize=1)
def _all() -> dict[tuple[str, int], KnownIssue]:
    raw = _raw()
    out = {}
    for source, items in raw.items():
        if source.startswith("_"):
            continue
        for index, item in items.items():
            if item["kind"] not in KINDS:
                raise ValueError(f"known_issues.json: bad kind {item['kind']!r}")
            out[(source, int(index))] = KnownIssue(source, int(index), item["kind"],
                                                  item["reason"], item["gold_scores_one"])
    return out


def issue_of(source: str, source_index: int) -> KnownIssue | None:
    """The known issue of one task (by its upstream source file and index), if any."""
    return _all().get((source, source_index))
