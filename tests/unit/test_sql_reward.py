"""InterCode's SQL reward (IoU x Kendall tau) and Spider's ``result_eq``, by hand and by oracle."""

from __future__ import annotations

import math
import random
import warnings
from collections import Counter

import numpy as np
import pytest
from scipy.stats import kendalltau

from intercode.rewards.sql import SqlReward, intersect_in_order, iou_tau, result_eq, sql_reward

R1, R2, R3 = (1, "a"), (2, "b"), (3, "c")


# -- the reward, by hand ---------------------------------------------------------------------


def test_identical_lists() -> None:
    got = sql_reward([R1, R2, R3], [R1, R2, R3], "SELECT id, name FROM t")
    # IoU 3/3 = 1, tau of identical orders = 1 -> round(1 * 1, 2) = 1.0
    assert got == SqlReward(reward=1.0, iou=1.0, tau=1.0, exec_match=True)
    assert got.success


def test_reversed_rows_give_a_negative_reward() -> None:
    got = sql_reward([R3, R2, R1], [R1, R2, R3], "SELECT id, name FROM t")
    # IoU 1; the 3 pairs all discordant: tau = -1 -> round(-1 * 1, 2) = -1.0
    assert got.reward == -1.0
    assert got.iou == 1.0
    assert got.tau == -1.0
    assert not got.success
    assert got.exec_match  # no ORDER BY in the gold: Spider ignores the order


def test_reversed_rows_fail_exec_match_when_the_gold_orders() -> None:
    got = sql_reward([R3, R2, R1], [R1, R2, R3], "SELECT id, name FROM t ORDER BY id")
    assert got.reward == -1.0
    assert not got.exec_match


def test_partial_overlap_in_order() -> None:
    got = sql_reward([R1, R2, R3], [R1, R2], "SELECT * FROM t")
    # intersection {R1, R2} = 2, union {R1, R2, R3} = 3 -> IoU 2/3;
    # common rows in the same order -> tau 1 -> round(0.666.. * 100) / 100 = 67 / 100
    assert got.iou == pytest.approx(2 / 3)
    assert got.tau == 1.0
    assert got.reward == 0.67
    assert not got.exec_match  # 3 rows against 2


def test_duplicates_are_a_multiset() -> None:
    a, b = ("a",), ("b",)
    got = sql_reward([a, a, b], [a, b, b], "SELECT x FROM t")
    # intersection {a: min(2,1), b: min(1,2)} = 2; union {a: max(2,1), b: max(1,2)} = 4
    # IoU = 2/4 = 0.5; common in order: agent [a, b], gold [a, b] -> tau 1 -> 0.5
    assert got.iou == 0.5
    assert got.tau == 1.0
    assert got.reward == 0.5
    assert not got.exec_match  # the bags differ


def test_duplicates_with_ties_in_the_tau() -> None:
    a, b, c = ("a",), ("b",), ("c",)
    reward, iou, tau = iou_tau([a, b, a, c], [a, a, b, c])
    # the same multiset: IoU 4/4 = 1. Common rows: agent [a,b,a,c], gold [a,a,b,c];
    # pairs: (0,1) gold tied, (0,2) agent tied, (1,2) discordant, (0,3) (1,3) (2,3) concordant
    # tau_b = (3 - 1) / sqrt((6 - 1) * (6 - 1)) = 2 / 5 = 0.4 -> round(0.4 * 1, 2) = 0.4
    assert iou == 1.0
    assert tau == pytest.approx(0.4)
    assert reward == 0.4


def test_common_rows_keep_only_the_shared_multiplicity() -> None:
    a, b = "('a',)", "('b',)"
    # agent a,a,a,b vs common {a: 2, b: 1}: the first two a's and the b, in order
    assert intersect_in_order([a, b, a, a], Counter({a: 2, b: 1})) == [a, b, a]
    assert intersect_in_order([a, a], Counter()) == []


def test_single_common_row_leaves_the_iou_unrounded() -> None:
    got = sql_reward([(1,), (2,)], [(1,), (3,)], "SELECT x FROM t")
    # intersection {(1,)} = 1, union {(1,), (2,), (3,)} = 3; tau of one item is NaN,
    # so the reward is the bare IoU 1/3 (not rounded to 0.33)
    assert got.reward == 0.3333333333333333
    assert got.iou == 0.3333333333333333
    assert got.tau is None


def test_both_empty_is_a_full_reward() -> None:
    got = sql_reward([], [], "SELECT x FROM t WHERE 0")
    assert got == SqlReward(reward=1.0, iou=1.0, tau=None, exec_match=True)
    assert got.success


def test_no_rows_from_the_agent() -> None:
    # an error or a statement without rows: 0, whatever the gold
    assert sql_reward(None, [(1,)], "SELECT 1") == SqlReward(0.0, 0.0, None, False)
    assert sql_reward(None, [], "SELECT 1") == SqlReward(0.0, 0.0, None, False)


def test_failing_gold_counts_as_empty() -> None:
    # upstream: a gold that fails leaves an empty result, so [] against it is a full reward
    assert sql_reward([], None, "SELECT nope").reward == 1.0
    got = sql_reward([(1,)], None, "SELECT nope")
    assert got.reward == 0.0  # IoU 0 / 1
    assert not got.exec_match


def test_empty_against_rows_is_zero() -> None:
    got = sql_reward([], [(1,), (2,)], "SELECT x FROM t")
    # intersection 0, union 2 -> IoU 0, no common rows so no tau
    assert got == SqlReward(reward=0.0, iou=0.0, tau=None, exec_match=False)
    assert sql_reward([(1,)], [], "SELECT x").reward == 0.0


def test_disjoint_rows_are_zero() -> None:
    assert iou_tau([(1,), (2,)], [(3,)]) == (0.0, 0.0, None)


def test_rounding_is_numpys_at_a_half_cent() -> None:
    agent = [(i,) for i in range(6)] + [(10 + i,) for i in range(5)]
    gold = [(i,) for i in (0, 1, 3, 5, 4, 2)] + [(20 + i,) for i in range(5)]
    reward, iou, tau = iou_tau(agent, gold)
    # common: 6 rows; union: 6 + 5 + 5 = 16 -> IoU 6/16 = 0.375.
    # gold order 0,1,3,5,4,2 has 4 inversions of 15 pairs -> tau = (15 - 8) / 15 = 7/15.
    # tau * IoU = 0.175 (in binary 0.17499999999999998890...): scaled by 100 this is 17.5
    # exactly as a float, which numpy's round-half-even sends to 18 -> 0.18, whereas
    # Python's round(0.175, 2) rounds the exact binary value down to 0.17.
    assert iou == 0.375
    assert tau == pytest.approx(7 / 15)
    assert tau * iou == 0.175
    assert round(tau * iou, 2) == 0.17  # Python's rounding, which upstream did not use
    assert float(round(np.float64(tau) * iou, 2)) == 0.18  # upstream's numpy float
    assert reward == 0.18


def test_rounding_half_to_even() -> None:
    agent = [(1,), (2,), (3,), (7,), (8,)]
    gold = [(1,), (3,), (2,), (4,), (5,), (6,)]
    reward, iou, tau = iou_tau(agent, gold)
    # common (1,),(2,),(3,): 3; union 3 + 2 + 3 = 8 -> IoU 0.375
    # gold order 1,3,2: one discordant pair of 3 -> tau = (2 - 1) / 3 = 1/3
    # tau * IoU = 0.125 -> 12.5 -> half to even -> 12 -> 0.12
    assert iou == 0.375
    assert tau == pytest.approx(1 / 3)
    assert reward == 0.12


def test_negative_half_cent() -> None:
    agent = [(i,) for i in (2, 4, 5, 3, 1, 0)] + [(10 + i,) for i in range(5)]
    gold = [(i,) for i in range(6)] + [(20 + i,) for i in range(5)]
    reward, iou, tau = iou_tau(agent, gold)
    assert iou == 0.375  # 6 common of 6 + 5 + 5
    # agent order 2,4,5,3,1,0 against 0..5: inversions (2,1)(2,0)(4,3)(4,1)(4,0)(5,3)(5,1)
    # (5,0)(3,1)(3,0)(1,0) = 11 of 15 -> tau = (4 - 11) / 15 = -7/15; * 0.375 = -0.175
    # -> -17.5 -> half to even -> -18 -> -0.18
    assert tau == pytest.approx(-7 / 15)
    assert reward == -0.18


def test_rows_are_compared_as_strings() -> None:
    # str((1,)) = '(1,)' and str((1.0,)) = '(1.0,)': different rows for the reward
    got = sql_reward([(1,)], [(1.0,)], "SELECT x FROM t")
    assert got.reward == 0.0
    # ... although equal for Spider's result_eq (1 == 1.0 in Python)
    assert got.exec_match
    # '1' (text) and 1 (integer) differ for both
    got = sql_reward([("1",)], [(1,)], "SELECT x FROM t")
    assert got.reward == 0.0
    assert not got.exec_match


def test_rows_with_null_and_floats() -> None:
    agent = [(None, 1.5, "x"), (2, None, "y")]
    gold = [(None, 1.5, "x"), (2, None, "y"), (3, 0.1, None)]
    got = sql_reward(agent, gold, "SELECT a, b, c FROM t")
    # '(None, 1.5, 'x')' and '(2, None, 'y')' shared in order: IoU 2/3, tau 1 -> 0.67
    assert got.reward == 0.67
    assert got.tau == 1.0
    assert not got.exec_match


def test_the_tau_ranks_the_stringified_rows() -> None:
    # upstream pairs the i-th common row of the agent with the i-th of the gold and ranks
    # them as text: '(10,)' < '(2,)' < '(9,)'.
    # agent (2,),(9,),(10,) -> ranks [1, 2, 0]; gold (2,),(10,),(9,) -> ranks [1, 0, 2]
    # pairs (0,1): 1<2 vs 1>0 D; (0,2): 1>0 vs 1<2 D; (1,2): 2>0 vs 0<2 D -> tau = -1
    # (ranked as numbers, [0,1,2] vs [0,2,1] would give (2 - 1) / 3 = 1/3 instead)
    reward, iou, tau = iou_tau([(2,), (9,), (10,)], [(2,), (10,), (9,)])
    assert (reward, iou, tau) == (-1.0, 1.0, -1.0)


# -- the reward, against an independent oracle of upstream's get_reward -----------------------


def upstream_reward(agent: list[tuple], gold: list[tuple]) -> float:
    """Upstream's arithmetic, written out: Counter IoU, SciPy's tau, numpy's rounding."""
    a = [str(r) for r in agent]
    g = [str(r) for r in gold]
    ca, cg = Counter(a), Counter(g)
    shared = ca & cg
    union = {k: max(ca[k], cg[k]) for k in set(ca) | set(cg)}
    if not union:
        return 1.0
    reward = sum(shared.values()) / sum(union.values())
    if shared:
        def common(items: list[str]) -> list[str]:
            left = dict(shared)
            out = []
            for s in items:
                if left.get(s, 0) > 0:
                    left[s] -= 1
                    out.append(s)
            return out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tau = kendalltau(common(a), common(g), nan_policy="omit").statistic
        if not math.isnan(tau):
            reward = float(round(np.float64(tau) * reward, 2))
    return reward


def test_reward_matches_the_oracle_on_random_results() -> None:
    rng = random.Random(2024)
    checked = rounded = 0
    for _ in range(1500):
        pool = [(rng.randrange(8), rng.choice(["x", "y", None])) for _ in range(rng.randint(1, 12))]
        agent = [rng.choice(pool) for _ in range(rng.randint(0, 15))]
        if rng.random() < 0.5:
            gold = list(agent)
            rng.shuffle(gold)
            gold = gold[:rng.randint(0, len(gold))] + [rng.choice(pool) for _ in range(rng.randint(0, 3))]
        else:
            gold = [rng.choice(pool) for _ in range(rng.randint(0, 15))]
        reward, _, tau = iou_tau(agent, gold)
        expected = upstream_reward(agent, gold)
        assert reward == expected, (agent, gold, reward, expected)
        checked += 1
        rounded += tau is not None
    assert checked == 1500
    assert 300 < rounded < 1500  # both the rounded and the NaN-tau paths were exercised


def test_a_result_equal_to_the_gold_scores_as_the_general_computation() -> None:
    # equal results take a short cut; its tau must be the general one's to the last bit
    from intercode.rewards.kendall import kendall_tau_b
    from intercode.rewards.rounding import round_like_numpy

    rng = random.Random(7)
    sizes = [0, 1, 2, 3, 5, 8, 13, 100, 999, 4097]
    for n in sizes + [rng.randrange(2, 3000) for _ in range(40)]:
        for distinct in (1, 2, max(1, n // 3), max(1, n)):
            rows = [(rng.randrange(distinct), "v") for _ in range(n)]
            reward, iou, tau = iou_tau(rows, list(rows))
            assert iou == 1.0
            text = [str(r) for r in rows]
            general = kendall_tau_b(text, text) if n else math.nan
            if math.isnan(general):
                assert (reward, tau) == (1.0, None)
            else:
                assert tau == general and reward == round_like_numpy(general * 1.0)
            assert reward == upstream_reward(rows, list(rows))
            assert result_eq(list(rows), list(rows), order_matters=True)
    # equal under == but not as text (1 and 1.0): upstream's reward compares the text
    assert iou_tau([(1,), (2,)], [(1.0,), (2,)])[1] == pytest.approx(1 / 3)
    assert result_eq([(1,), (2,)], [(1.0,), (2,)], order_matters=True)
    # and Spider's check sorts each row's values by their text and type first: an int
    # and a float that are equal (==) still do not match there
    assert not result_eq([(15, 1)], [(15.0, 1.0)], order_matters=False)
    assert not result_eq([(3, 35.5)], [(3.0, 35.5)], order_matters=True)


# -- Spider's result_eq ----------------------------------------------------------------------


def test_result_eq_column_permutation() -> None:
    gold = [(1, "a"), (2, "b")]
    assert result_eq(gold, [("a", 1), ("b", 2)], order_matters=False)
    assert result_eq(gold, [("a", 1), ("b", 2)], order_matters=True)
    # the columns swapped and the rows reversed: equal only when order does not matter
    assert result_eq(gold, [("b", 2), ("a", 1)], order_matters=False)
    assert not result_eq(gold, [("b", 2), ("a", 1)], order_matters=True)


def test_result_eq_three_columns_permuted() -> None:
    gold = [(1, "x", 2.5), (2, "y", 3.5)]
    pred = [(2.5, 1, "x"), (3.5, 2, "y")]
    assert result_eq(gold, pred, order_matters=True)


def test_result_eq_needs_one_permutation_for_every_row() -> None:
    # each row alone is a permutation of the gold's, but no single column order fits both
    gold = [(1, 2, 3), (4, 5, 6)]
    pred = [(2, 1, 3), (4, 5, 6)]
    assert not result_eq(gold, pred, order_matters=False)
    # same column values in other rows
    assert not result_eq([(1, 2), (3, 4)], [(1, 4), (3, 2)], order_matters=False)


def test_result_eq_row_order() -> None:
    assert result_eq([(1,), (2,)], [(2,), (1,)], order_matters=False)
    assert not result_eq([(1,), (2,)], [(2,), (1,)], order_matters=True)
    assert result_eq([(1,), (2,)], [(1,), (2,)], order_matters=True)


def test_result_eq_lengths_and_widths() -> None:
    assert not result_eq([(1,), (2,)], [(1,)], order_matters=False)
    assert not result_eq([(1, 2)], [(1,)], order_matters=False)
    assert not result_eq([(1,)], [(1, 1)], order_matters=False)
    assert not result_eq([(1,)], [], order_matters=False)
    assert not result_eq([], [(1,)], order_matters=False)


def test_result_eq_counts_duplicates() -> None:
    # the same set of rows {1, 2} but different multiplicities
    assert not result_eq([(1,), (1,), (2,)], [(1,), (2,), (2,)], order_matters=False)
    assert result_eq([(1,), (1,), (2,)], [(1,), (2,), (1,)], order_matters=False)


def test_result_eq_empty() -> None:
    assert result_eq([], [], order_matters=False)
    assert result_eq([], [], order_matters=True)


def test_result_eq_values_compare_as_python_values() -> None:
    assert result_eq([(1, None)], [(1.0, None)], order_matters=True)
    assert not result_eq([("1",)], [(1,)], order_matters=True)


@pytest.mark.parametrize(("gold_sql", "ordered"), [
    ("SELECT x FROM t ORDER BY x", True),
    ("select x from t order by x desc", True),
    ("SELECT x FROM t Order By x", True),
    ("SELECT x FROM t", False),
    ("SELECT x FROM t GROUP BY x", False),
    ("SELECT border FROM t", False),  # 'order' alone is not 'order by'
])
def test_exec_match_orders_only_when_the_gold_has_order_by(gold_sql: str, ordered: bool) -> None:
    gold = [(1,), (2,), (3,)]
    agent = [(3,), (1,), (2,)]
    got = sql_reward(agent, gold, gold_sql)
    assert got.exec_match is (not ordered)
    # the reward itself ignores the gold SQL: IoU 1; agent '(3,)','(1,)','(2,)' vs
    # gold '(1,)','(2,)','(3,)': pairs (0,1) D, (0,2) D, (1,2) C -> tau = (1 - 2) / 3
    # -> round(-1/3 * 100) / 100 = -33 / 100
    assert got.reward == -0.33
