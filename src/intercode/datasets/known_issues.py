"""Tasks whose gold is broken, or whose result depends on the host or the time, by
dataset (the table itself: :mod:`intercode.datasets.issue_table`).

The list lives in ``data/known_issues.json`` keyed by the upstream source file and
index, with a kind (``broken_gold``, ``host_dependent``, ``time_dependent``,
``nondeterministic``, ``network``) and a reason; ``intercode validate`` checks it
and reports print it.
"""

from __future__ import annotations

from intercode.datasets.issue_table import KINDS, KnownIssue, all_issues, issue_of
from intercode.datasets.registry import load_dataset

__all__ = ["KINDS", "KnownIssue", "issue_of", "known_issues"]


def known_issues(dataset: str, env: str | None = None) -> dict[int, KnownIssue]:
    """Known issues of a dataset's tasks, by task index (``env``: for a task file)."""
    table = all_issues()
    found = {}
    for task in load_dataset(dataset, env):
        issue = table.get((task.source, task.source_index))
        if issue is not None:
            found[task.index] = issue
    return found
