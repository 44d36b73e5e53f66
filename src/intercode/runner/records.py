"""The episode record: one line of ``results.jsonl`` (schema version 2).

Fields are only ever added, never renamed or removed; readers must ignore fields
they do not know. Version 2 added what the model saw: each turn's ``llm["prompts"]``
(the ids of every call's messages, see :mod:`intercode.runner.messages`) and the
episode's ``messages`` table, which the runner moves into the run's ``messages.jsonl``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["SCHEMA", "EpisodeRecord", "Turn", "malformed", "plain_copy"]

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
        """A JSON-serialisable dict: what ``dataclasses.asdict`` gives (every value a copy),
        the turns as a list (see :func:`plain_copy`)."""
        data = {f.name: plain_copy(getattr(self, f.name)) if f.name != "turns"
                else [plain_copy(t) for t in self.turns] for f in _RECORD_FIELDS}
        if data["messages"] is None:
            del data["messages"]
        return data


_ATOMS = frozenset({str, int, float, bool, type(None)})
_RECORD_FIELDS = fields(EpisodeRecord)


@dataclass(frozen=True)
class _Boxed:
    value: Any


def plain_copy(value: Any) -> Any:
    """``dataclasses.asdict``'s copy of ``value`` (dataclasses as dicts, every container
    copied, anything else deep-copied), fast for the types records hold: plain dicts,
    lists and tuples of strings and numbers are copied here, without ``asdict``'s deep copy
    of every leaf; any other type goes through ``asdict`` itself."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {plain_copy(k): plain_copy(v) for k, v in value.items()}
    if kind is list:
        return [plain_copy(v) for v in value]
    if kind is tuple:
        return tuple(plain_copy(v) for v in value)
    if kind is Turn:
        return {f.name: plain_copy(getattr(value, f.name)) for f in _TURN_FIELDS}
    return asdict(_Boxed(value))["value"]


_TURN_FIELDS = fields(Turn)


LLM_NUMBERS = ("calls", "prompt_tokens", "completion_tokens", "latency_s", "reasoning_tokens")


def _number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _reward(value: Any) -> bool:
    return _number(value) and -1 <= value <= 1


def malformed(rec: dict[str, Any]) -> str | None:
    """What is wrong with a read record's fields that summaries and views use (None: nothing).

    ``reward`` is a finite number in [-1, 1] (SQL's rewards go below 0 when the rows
    come in the opposite order) or null; ``success`` a boolean or null (a missing
    reward or success is no success and reward 0); ``turns`` a list
    (a turn's ``reward`` as the record's, or null);
    ``best_turn`` a non-negative integer or null; ``llm`` an object whose counts are
    finite numbers. A record of a results file someone else wrote may claim anything.
    """
    reward, success = rec.get("reward"), rec.get("success")
    if reward is not None and not _reward(reward):
        return "reward is not a number from -1 to 1"
    if success is not None and not isinstance(success, bool):
        return "success is not true or false"
    turns = rec.get("turns", [])
    if not isinstance(turns, list):
        return "turns is not a list"
    for turn in turns:
        if isinstance(turn, dict) and turn.get("reward") is not None and not _reward(
                turn["reward"]):
            return "a turn's reward is not a number from -1 to 1"
    best = rec.get("best_turn")
    if best is not None and (type(best) is not int or best < 0):
        return "best_turn is not a turn number"
    llm = rec.get("llm")
    if llm is not None and not (isinstance(llm, dict) and all(
            llm.get(k) is None or _number(llm[k]) for k in LLM_NUMBERS)):
        return "llm is not an object of counts"
    return None
