"""Test outcomes the gold's sandbox already decided, kept for the same question.

A Python episode is scored by two forks of interpreters: the agent's reports the
values of the tests' sub-expressions, and a fork of the gold's interpreter decides each
test on those values (its templates run on nothing but the reported data and the
builtins), running the gold's own tests the first time. What the gold's side answers is
a function of what it was asked: the gold's request, and the templates with the
reported values, byte for byte. An environment keeps some of those answers, so that an
episode asking the same again (the gold replayed, a right answer that an RL policy gives
again and again) is scored without forking the gold's interpreter:

* the gold's own outcomes, once two scorings gave the same (a test of the gold that
  passes or fails by chance, or ran out of memory once, is never kept);
* the outcomes of an answer, only when they equal those kept gold outcomes test for
  test (an answer that fails a test is always judged afresh: a failure that came from
  the machine, not from the answer, is never handed to a later episode).

No list in which a test ran out of its time is kept (its outcome says something of the
machine's load).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any

from intercode.rewards.python import Outcome

__all__ = ["MAX_CHARS", "MAX_ENTRIES", "MAX_MAP_CHARS", "OutcomeMemo", "decided_alone",
           "question_digest"]

MAX_ENTRIES = 4096  # golds, and answers, kept each (the least recently used dropped first)
MAX_CHARS = 64 * 1024  # an outcome list larger than this (as JSON) is not kept
MAX_MAP_CHARS = 8 << 20  # characters of JSON each of the three maps keeps at most

# what an outcome says when its test ran out of time (see ``sandbox/inbox/pyscore.py``)
_TIMED_OUT = "the test took more than"
_UNSTABLE: list[Outcome] = []  # a gold whose two scorings differed: never kept


def decided_alone(outcomes: list[Outcome]) -> bool:
    """Whether no test of ``outcomes`` ran out of its time."""
    return not any(isinstance(value, str) and _TIMED_OUT in value
                   for item in outcomes for value in item.values())


def question_digest(question: Any) -> str:
    """A question's key: the digest of its canonical JSON."""
    text = json.dumps(question, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


_key = question_digest


def _copy(outcomes: list[Outcome]) -> list[Outcome]:
    return [dict(item) for item in outcomes]


class _Bounded(OrderedDict[str, list[Outcome]]):
    """Outcome lists by key, the least recently used dropped first past ``entries`` lists
    or :data:`MAX_MAP_CHARS` characters of JSON in all; a list over :data:`MAX_CHARS` is
    not kept."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: dict[str, int] = {}
        self.total = 0

    def keep(self, key: str, value: list[Outcome], entries: int) -> None:
        size = len(json.dumps(value))
        if size > MAX_CHARS:
            return
        self.total += size - self.sizes.get(key, 0)
        self.sizes[key] = size
        self[key] = value
        self.move_to_end(key)
        while len(self) > entries or self.total > MAX_MAP_CHARS:
            old, _ = self.popitem(last=False)
            self.total -= self.sizes.pop(old)

    def take(self, key: str) -> list[Outcome] | None:
        """Remove and return the list of ``key`` (None if absent)."""
        if key not in self:
            return None
        self.total -= self.sizes.pop(key)
        return self.pop(key)


class OutcomeMemo:
    """The gold's side's answers by question (bounded; one per environment)."""

    def __init__(self, entries: int = MAX_ENTRIES) -> None:
        self.entries = entries
        self._seen: _Bounded = _Bounded()  # gold outcomes seen once: confirmed by a second
        self._golds: _Bounded = _Bounded()  # gold outcomes confirmed (or _UNSTABLE)
        self._answers: _Bounded = _Bounded()  # answers' outcomes equal to their gold's

    def _confirmed(self, gold_key: str) -> list[Outcome] | None:
        """The confirmed gold outcomes kept under ``gold_key`` (not a copy), or None."""
        found = self._golds.get(gold_key)
        if not found:  # (None, or _UNSTABLE)
            return None
        self._golds.move_to_end(gold_key)
        return found

    def gold(self, gold_question: Any) -> list[Outcome] | None:
        """The gold's confirmed outcomes for its request, or None."""
        found = self._confirmed(_key(gold_question))
        return None if found is None else _copy(found)

    def knows(self, gold_question: Any) -> bool:
        """Whether the gold's outcomes for its request are decided here: confirmed, or
        found unstable (two scorings differed)."""
        return _key(gold_question) in self._golds

    def adopt_gold(self, gold_question: Any, outcomes: list[Outcome]) -> None:
        """Take ``outcomes`` as the gold's confirmed ones (two scorings agreed elsewhere:
        the outcome store's), unless this memo decided them already."""
        key = _key(gold_question)
        if key not in self._golds and decided_alone(outcomes):
            self._seen.take(key)
            self._golds.keep(key, _copy(outcomes), self.entries)

    def forget_gold(self, gold_question: Any) -> None:
        """Never keep the gold's outcomes for its request (scorings elsewhere differed:
        the outcome store's)."""
        key = _key(gold_question)
        self._seen.take(key)
        self._golds.keep(key, _UNSTABLE, self.entries)

    def saw_gold(self, gold_question: Any, outcomes: list[Outcome]) -> None:
        """The gold's side reported ``outcomes`` for the gold's request."""
        if not decided_alone(outcomes):
            return
        key = _key(gold_question)
        if key in self._golds:
            if self._golds[key] and self._golds[key] != outcomes:
                self._golds.keep(key, _UNSTABLE, self.entries)
            return
        first = self._seen.take(key)
        if first is None:
            self._seen.keep(key, _copy(outcomes), self.entries)
        else:
            self._golds.keep(key, _copy(outcomes) if first == outcomes else _UNSTABLE,
                             self.entries)

    def answer(self, gold_question: Any, question: Any) -> list[Outcome] | None:
        """The outcomes once given for an answer's ``question``, or None."""
        gold_key = _key(gold_question)
        if self._confirmed(gold_key) is None:
            return None
        key = _key([gold_key, question])
        found = self._answers.get(key)
        if found is None:
            return None
        self._answers.move_to_end(key)
        return _copy(found)

    def saw_answer(self, gold_question: Any, question: Any, outcomes: list[Outcome]) -> None:
        """The gold's side judged an answer's ``question`` as ``outcomes``: kept only if
        they equal the gold's confirmed outcomes."""
        gold_key = _key(gold_question)
        gold = self._confirmed(gold_key)
        if gold is None or outcomes != gold:  # (a confirmed gold ran out of no time)
            return
        self._answers.keep(_key([gold_key, question]), _copy(outcomes), self.entries)
