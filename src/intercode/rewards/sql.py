"""InterCode's SQL reward, and Spider's execution accuracy beside it.

Upstream (``get_reward`` in ``intercode/envs/sql/sql_env.py``): if both the agent's
last result and the gold's are row lists, the rows are stringified (``str(row)``) and
the reward is the intersection over union of the two multisets; when the common rows
are at least one, it is scaled by the Kendall tau-b of their order in the two lists
and rounded to two decimals (numpy's rounding; a NaN tau leaves the IoU unrounded).
Both empty gives 1. Anything else (an error, a statement without rows) gives 0. A
failing gold counted as an empty result.

The stricter metric is the official Spider test-suite ``result_eq``: equal bags of
rows up to a permutation of columns, in order only when the gold has ``ORDER BY``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from intercode.rewards.kendall import kendall_tau_b
from intercode.rewards.rounding import round_like_numpy

__all__ = ["Row", "SqlReward", "result_eq", "sql_reward"]

Row = tuple[Any, ...]


@dataclass(frozen=True)
class SqlReward:
    """The reward and what it was computed from."""

    reward: float
    iou: float
    tau: float | None
    exec_match: bool

    @property
    def success(self) -> bool:
        """Upstream's success: a reward of exactly 1."""
        return self.reward == 1


def intersect_in_order(items: list[str], common: Counter[str]) -> list[str]:
    """The items that are in ``common`` (with multiplicity), in their order."""
    left = Counter(common)
    out = []
    for item in items:
        if left[item] > 0:
            left[item] -= 1
            out.append(item)
    return out


def iou_tau(agent: Sequence[Row], gold: Sequence[Row]) -> tuple[float, float, float | None]:
    """Upstream's reward of two row lists, the plain IoU, and the tau applied (or None)."""
    list_agent = [str(row) for row in agent]
    list_gold = [str(row) for row in gold]
    if list_agent == list_gold:
        return _same_rows(list_agent)
    count_agent, count_gold = Counter(list_agent), Counter(list_gold)
    common = count_agent & count_gold
    union = count_agent | count_gold
    if not union:
        return 1.0, 1.0, None
    iou = sum(common.values()) / sum(union.values())
    if not common:
        return iou, iou, None
    tau = kendall_tau_b(intersect_in_order(list_agent, common),
                        intersect_in_order(list_gold, common))
    if math.isnan(tau):
        return iou, iou, None
    return round_like_numpy(tau * iou), iou, tau


def _same_rows(rows: list[str]) -> tuple[float, float, float | None]:
    """``iou_tau`` of a list and itself: an IoU of 1, and the tau-b ``kendall_tau_b``
    gives (no discordant pair; the same ties on both sides), computed alike."""
    n = len(rows)
    total = n * (n - 1) // 2
    ties = sum(c * (c - 1) // 2 for c in Counter(rows).values())
    if ties == total:  # no rows, one, or all alike: no tau
        return 1.0, 1.0, None
    left = total - ties
    tau = min(1.0, max(-1.0, left / math.sqrt(left) / math.sqrt(left)))
    return round_like_numpy(tau), 1.0, tau


def sql_reward(agent_rows: Sequence[Row] | None, gold_rows: Sequence[Row] | None,
               gold_sql: str) -> SqlReward:
    """Both metrics; ``None`` rows mean an error or a statement without rows.

    The agent's ``None`` scores 0; the gold's counts as an empty result, as upstream.
    """
    if agent_rows is None:
        return SqlReward(0.0, 0.0, None, False)
    if gold_rows is None:
        gold_rows = []
    reward, iou, tau = iou_tau(agent_rows, gold_rows)
    order = "order by" in gold_sql.lower()
    return SqlReward(reward=reward, iou=iou, tau=tau,
                     exec_match=result_eq(list(gold_rows), list(agent_rows), order))


def result_eq(gold: list[Row], pred: list[Row], order_matters: bool) -> bool:
    """Spider test-suite equivalence of two results (column permutations allowed)."""
    if not gold and not pred:
        return True
    if len(gold) != len(pred) or not gold or not pred:
        return False
    width = len(gold[0])
    if len(pred[0]) != width or any(len(r) != width for r in pred) or any(
            len(r) != width for r in gold):
        return False
    if not _unordered_rows_match(gold, pred, order_matters):
        return False
    columns = [{row[i] for row in gold} for i in range(width)]
    for perm in _candidate_permutations(columns, pred, width):
        permuted = [tuple(row[i] for i in perm) for row in pred]
        if order_matters:
            if permuted == gold:
                return True
        elif Counter(permuted) == Counter(gold):
            return True
    return False


def _unordered_rows_match(gold: list[Row], pred: list[Row], order_matters: bool) -> bool:
    def unorder(row: Row) -> Row:
        return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))
    a, b = [unorder(r) for r in gold], [unorder(r) for r in pred]
    return a == b if order_matters else set(a) == set(b)


def _candidate_permutations(columns: list[set[Any]], pred: list[Row],
                            width: int) -> Iterator[tuple[int, ...]]:
    """Column permutations consistent with every predicted row's values (depth first)."""
    allowed = [[j for j in range(width) if all(row[j] in columns[i] for row in pred)]
               for i in range(width)]
    chosen: list[int] = []
    used: set[int] = set()

    def extend(i: int) -> Iterator[tuple[int, ...]]:
        if i == width:
            yield tuple(chosen)
            return
        for j in allowed[i]:
            if j not in used:
                chosen.append(j)
                used.add(j)
                yield from extend(i + 1)
                used.discard(j)
                chosen.pop()

    return extend(0)
