"""The BIRD-SQL dataset: InterCode's 338 BIRD dev tasks on three databases.

``bird-dev`` shows BIRD's ``evidence`` (its external knowledge) with the question, as
BIRD's own setting does; ``bird-dev-no-evidence`` is the same tasks without it. The
databases come from ``ic_bird_dbs.sql``, downloaded from the pinned upstream commit
and checked by its git blob id (a local mirror may leave it out for its size). A
task's difficulty (simple, moderate, challenging) is its category; its reward is
BIRD's execution accuracy (:mod:`intercode.rewards.execution`).
"""

from __future__ import annotations

from intercode.datafiles import REVISION
from intercode.datasets.spider import SqlTask, task_list
from intercode.datasets.tasks import Dataset
from intercode.fetch import data_file

__all__ = ["DUMP", "NAMES", "load", "with_evidence"]

DUMP = "bird_dbs"
NAMES = ("bird-dev", "bird-dev-no-evidence")


def with_evidence(question: str, evidence: str) -> str:
    """The question and BIRD's external knowledge (as BIRD's prompts give it)."""
    if not evidence.strip():
        return question
    return f"{question}\nExternal knowledge: {evidence.strip()}"


def load(name: str) -> Dataset:
    """Every task of ``ic_bird.json``, in its order (with the evidence unless ``name`` is
    ``bird-dev-no-evidence``)."""
    path = data_file("bird_dev")
    show = name != "bird-dev-no-evidence"
    tasks = []
    for i, fields in enumerate(task_list(path, name, ("query", "gold", "db", "difficulty"),
                                         optional=("evidence",))):
        query = with_evidence(fields["query"], fields["evidence"]) if show else fields["query"]
        tasks.append(SqlTask(index=i, query=query, gold=fields["gold"], dataset=name,
                             source="bird-dev", source_index=i, db=fields["db"],
                             hardness=fields["difficulty"], dump=DUMP, metric="bird"))
    described = "BIRD-SQL dev (InterCode's 338 tasks on 3 databases)"
    return Dataset(name, "sql", tuple(tasks), REVISION,
                   described + (", with evidence" if show else ", without evidence"))
