"""The episode record: one line of ``results.jsonl`` (schema version 2).

Fields are only ever added, never renamed or removed; readers must ignore fields
they do not know. Version 2 added what the model saw: each turn's ``llm["prompts"]``
(the ids of every call's messages, see :mod:`intercode.runner.messages`) and the
episode's ``messages`` table, which the runner moves into the run's ``messages.jsonl``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = 2


@dataclass(frozen=True)
class Turn:
    """One action and what it gave."""

    action: str
    observation: str
    reward: float | None
    valid: bool = True
    submit: bool = False
    exit_code: int | None = None
    timed_out: bool = False
    llm: dict[str, Any] | None = None
    env_s: float | None = None


@dataclass(frozen=True)
class EpisodeRecord:
    """Everything about one finished episode.

    ``status`` is ``"ok"``, ``"error"`` or ``"skipped"``; an error is an infrastructure
    fault and a skip a task that cannot run here (``error`` says which); neither carries
    a reward. ``reward`` is the episode's
    reward: the submitted one, or the best per-turn score under Try Again.
    ``agent_fault`` says what the agent's own actions broke when they left the sandbox
    unusable or unscorable: such an episode is ``ok`` with reward 0 (the agent's outcome).
    ``stop_reason`` says why an ``ok`` episode ended before its turns or a submission
    (the model server refused a prompt the dialogue had grown into).
    ``messages`` holds the messages the turns' ``llm["prompts"]`` name (a run keeps
    them in its ``messages.jsonl`` instead).
    """

    env: str
    dataset: str
    task: int
    source: str
    source_index: int
    query: str
    agent: str
    status: str
    reward: float | None
    success: bool | None
    turns: tuple[Turn, ...]
    error: str | None = None
    reward_info: dict[str, Any] | None = None
    best_turn: int | None = None
    duration_s: float = 0.0
    started_at: str = ""
    worker: int = 0
    known_issue: str | None = None
    category: str | None = None
    llm: dict[str, Any] | None = None
    agent_fault: str | None = None
    stop_reason: str | None = None
    messages: dict[str, dict[str, Any]] | None = None
    schema: int = SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        data = asdict(self)
        data["turns"] = [asdict(t) for t in self.turns]
        if data["messages"] is None:
            del data["messages"]
        return data
