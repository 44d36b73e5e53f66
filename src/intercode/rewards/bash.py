"""InterCode's Bash reward, as a pure function of two snapshots.

Upstream (``get_reward`` in ``intercode/envs/bash/bash_env.py``) adds four parts,
each rounded to two decimals:

* 0.01 base;
* 0.33 x (1 - erf(#missing + #extra)), comparing the sets of ``(path, status)``
  changes of the agent and of the gold run against the pristine file system;
* 0.33 x the share of changes both sides made with status ``A``, ``??`` or ``C``
  whose content fingerprints agree (0.33 when there are none);
* 0.33 x the TF-IDF cosine similarity of the agent's last observation and the gold
  command's output. Upstream's similarity is a ``numpy.float64`` (an entry of
  ``(X * X.T).toarray()``), so its ``round(..., 2)`` is numpy's rounding (scale by
  100, round half to even, divide by 100), not Python's correctly rounded one; they
  disagree when ``0.33 x similarity`` is a float next to a half-cent, e.g. a cosine of
  exactly 0.5 gives 0.16 upstream where Python's ``round(0.165, 2)`` gives 0.17.

Success is a reward of 1.0 (upstream stops Try Again episodes on ``reward == 1``).

TF-IDF ignores word order, case and punctuation, so some wrong answers get the whole
0.33. ``answer="strict"`` puts an exact check in its place: the two outputs, each
normalised (line endings ``\r\n`` and ``\r`` made ``\n``, the spaces and tabs at the end
of every line and the empty lines at the end removed), are equal or not: 0.33 or 0.
Order and case count. Every reward says whether the answers were equal so
(``answer_exact``), whichever check scored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from intercode.rewards.rounding import round_like_numpy
from intercode.rewards.tfidf import answer_similarity
from intercode.sandbox.base import Change

__all__ = ["ANSWER_CHECKS", "BashReward", "BashSnapshot", "bash_reward", "common_added",
           "normalised_answer"]

ANSWER_CHECKS = ("tfidf", "strict")

ADDED_CODES = ("A", "??", "C")


@dataclass(frozen=True)
class BashSnapshot:
    """What the reward needs from one side: its changes and its last output."""

    changes: tuple[Change, ...]
    output: str | None


@dataclass(frozen=True)
class BashReward:
    """The reward, its rounded parts and what they were computed from."""

    reward: float
    file_diff: float
    file_changes: float
    answer_similarity: float
    similarity: float
    diff_miss: tuple[Change, ...]
    diff_extra: tuple[Change, ...]
    diff_same: tuple[Change, ...]
    same_correct: int
    answer_exact: bool = False

    @property
    def success(self) -> bool:
        """Whether the reward is 1.0 (at two decimals)."""
        return round(self.reward, 2) >= 1.0

    def parts(self) -> dict[str, float]:
        """The three rounded parts, by upstream's names."""
        return {"file_diff": self.file_diff, "file_changes": self.file_changes,
                "answer_similarity": self.answer_similarity}


def common_added(agent: Sequence[Change], gold: Sequence[Change]) -> list[str]:
    """Paths both sides added (status A, ?? or C), whose fingerprints must be compared."""
    same = set(agent) & set(gold)
    return sorted(c.path for c in same if c.code in ADDED_CODES)


def normalised_answer(output: str | None) -> str:
    """An output as the strict check compares it (see the module docstring)."""
    text = (output or "").replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip(" \t") for line in text.split("\n")).rstrip("\n")


def bash_reward(agent: BashSnapshot, gold: BashSnapshot,
                agent_hashes: Mapping[str, str], gold_hashes: Mapping[str, str],
                answer_check: str = "tfidf") -> BashReward:
    """Compute the reward; the hash maps must cover :func:`common_added`'s paths.
    ``answer_check``: ``tfidf`` (InterCode's) or ``strict`` (see the module docstring)."""
    agent_set, gold_set = set(agent.changes), set(gold.changes)
    miss = tuple(sorted(gold_set - agent_set, key=_key))
    extra = tuple(sorted(agent_set - gold_set, key=_key))
    reward = 0.01
    file_diff = round(0.33 * (1 - math.erf(len(miss) + len(extra))), 2)
    reward += file_diff
    same = tuple(sorted((c for c in agent_set & gold_set if c.code in ADDED_CODES), key=_key))
    correct = 0
    file_changes = 0.33
    if same:
        correct = sum(1 for c in same if agent_hashes[c.path] == gold_hashes[c.path])
        file_changes = round(0.33 * (correct / len(same)), 2)
    reward += file_changes
    exact = normalised_answer(agent.output) == normalised_answer(gold.output)
    if answer_check == "strict":
        similarity = 1.0 if exact else 0.0
    else:
        similarity = answer_similarity(agent.output, gold.output)
    # The equality fallback is 0 or 1, for which both roundings agree.
    answer = round_like_numpy(0.33 * similarity)
    reward += answer
    return BashReward(reward=reward, file_diff=file_diff, file_changes=file_changes,
                      answer_similarity=answer, similarity=similarity, diff_miss=miss,
                      diff_extra=extra, diff_same=same, same_correct=correct,
                      answer_exact=exact)


def _key(change: Change) -> tuple[str, str]:
    return (change.path, change.code)
