"""Execution accuracy as WikiSQL and BIRD compute it: the reward of their datasets.

* WikiSQL (``evaluate.py``): the predicted and the gold query run on the table, each
  result read as the list of its values (a WikiSQL query selects one column), and the
  prediction is right when ``pred == gold``: the same values, in the same order, with
  the same multiplicity (``3 == 3.0``). A result whose rows are not one value wide
  cannot equal a gold's.
* BIRD (``evaluation.py``, ``execute_sql``): both run on the database, ``fetchall()``,
  and the prediction is right when ``set(predicted) == set(ground_truth)``: the same
  distinct rows, in any order, duplicates ignored, columns in the same order.

Both differ from Spider's ``exec_match`` (:func:`intercode.rewards.sql.result_eq`),
which compares bags of rows (duplicates count), in order only when the gold has
``ORDER BY``, and accepts a permutation of the columns. An agent's error or a
statement without rows scores 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from intercode.rewards.sql import Row, SqlReward, sql_reward

__all__ = ["METRICS", "bird_ex", "execution_reward", "wikisql_ex"]


def wikisql_ex(agent: Sequence[Row], gold: Sequence[Row]) -> bool:
    """WikiSQL's ``pred == gold`` of two results."""
    return [tuple(row) for row in agent] == [tuple(row) for row in gold]


def bird_ex(agent: Sequence[Row], gold: Sequence[Row]) -> bool:
    """BIRD's ``set(predicted_res) == set(ground_truth_res)``."""
    return {tuple(row) for row in agent} == {tuple(row) for row in gold}


METRICS: dict[str, Callable[[Sequence[Row], Sequence[Row]], bool]] = {
    "wikisql": wikisql_ex, "bird": bird_ex}


def execution_reward(metric: str, agent_rows: Sequence[Row] | None,
                     gold_rows: Sequence[Row] | None, gold_sql: str) -> tuple[SqlReward, float]:
    """The reward of a task scored by ``metric``: 1.0 when its execution accuracy holds,
    else 0.0 (``exec_match``: Spider's, as for every SQL task), and InterCode's reward
    of the same results beside it."""
    base = sql_reward(agent_rows, gold_rows, gold_sql)
    right = agent_rows is not None and METRICS[metric](agent_rows, gold_rows or [])
    return replace(base, reward=1.0 if right else 0.0), base.reward
