"""Kendall's tau-b against SciPy (the oracle), bit for bit, and against hand computation."""

from __future__ import annotations

import math
import random
import warnings

import pytest
from scipy.stats import kendalltau

from intercode.rewards.kendall import _inversions, kendall_tau_b


def scipy_tau(x: list, y: list) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy warns about samples too small (NaN)
        return float(kendalltau(x, y).statistic)


def same_float(a: float, b: float) -> bool:
    """Equal bit for bit (``0.0 == -0.0`` aside), or both NaN."""
    return (math.isnan(a) and math.isnan(b)) or a == b


# -- hand-computed values -------------------------------------------------------------------


def test_perfectly_reversed_three_items_is_minus_one() -> None:
    # 3 pairs, all discordant: (0 - 3) / sqrt(3) / sqrt(3) = -1 (clipped to [-1, 1]).
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau_b(["a", "b", "c"], ["c", "b", "a"]) == -1.0


def test_identical_order_is_one() -> None:
    assert kendall_tau_b(["x", "y", "z", "w"], ["x", "y", "z", "w"]) == 1.0
    assert kendall_tau_b([10, 20, 30], [1, 2, 3]) == 1.0


def test_one_swap_of_four() -> None:
    # [a,b,c,d] vs [a,c,b,d]: 6 pairs, only (b,c) discordant: P=5, Q=1 -> (5-1)/6 = 4/6.
    tau = kendall_tau_b(["a", "b", "c", "d"], ["a", "c", "b", "d"])
    assert tau == pytest.approx(0.6666666666666666, abs=1e-15)
    assert tau != 1.0


def test_tau_b_with_ties_on_both_sides() -> None:
    # x = [1,1,2,3], y = [1,2,2,3]; the 6 pairs:
    #   (0,1): x tied            (0,2): concordant   (0,3): concordant
    #   (1,2): y tied            (1,3): concordant   (2,3): concordant
    # P = 4, Q = 0, n0 = 6, n1 (x-tied pairs) = 1, n2 (y-tied pairs) = 1
    # tau_b = (P - Q) / sqrt((n0 - n1) * (n0 - n2)) = 4 / sqrt(5 * 5) = 0.8
    assert kendall_tau_b([1, 1, 2, 3], [1, 2, 2, 3]) == pytest.approx(0.8, abs=1e-15)


def test_tau_b_with_ties_and_a_discordant_pair() -> None:
    # x = [a,a,b], y = [b,a,a]: (0,1) x tied; (0,2) x a<b, y b>a: discordant; (1,2) y tied.
    # P = 0, Q = 1, n0 = 3, n1 = 1, n2 = 1 -> -1 / sqrt(2 * 2) = -0.5
    assert kendall_tau_b(["a", "a", "b"], ["b", "a", "a"]) == pytest.approx(-0.5, abs=1e-15)


def test_repeated_common_rows_as_in_the_reward() -> None:
    # x = [a,b,a,c], y = [a,a,b,c]; ranks a=0, b=1, c=2: x = [0,1,0,2], y = [0,0,1,2]
    # (0,1) y tied; (0,2) x tied; (0,3) C; (1,2) x 1>0, y 0<1: D; (1,3) C; (2,3) C
    # P = 3, Q = 1, n1 = 1, n2 = 1 -> (3 - 1) / sqrt(5 * 5) = 0.4
    assert kendall_tau_b(["a", "b", "a", "c"], ["a", "a", "b", "c"]) == pytest.approx(0.4)


def test_strings_are_ranked_lexicographically() -> None:
    # '10' < '9' as strings, so the same numbers as strings are discordant.
    assert kendall_tau_b(["9", "10"], ["a", "b"]) == -1.0
    assert kendall_tau_b([9, 10], ["a", "b"]) == 1.0


@pytest.mark.parametrize(("x", "y"), [
    ([], []),
    (["a"], ["b"]),
    (["a", "a", "a"], ["x", "y", "z"]),  # every pair tied in x
    ([1, 2, 3], [7, 7, 7]),  # every pair tied in y
])
def test_nan_when_every_pair_is_tied_on_a_side(x: list, y: list) -> None:
    assert math.isnan(kendall_tau_b(x, y))
    assert math.isnan(scipy_tau(x, y))


def test_length_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        kendall_tau_b([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):
        kendall_tau_b([], ["a"])


def test_inversions_counts_pairs_out_of_order() -> None:
    assert _inversions([]) == 0
    assert _inversions([5]) == 0
    assert _inversions([1, 2, 3]) == 0
    assert _inversions([3, 2, 1]) == 3  # every one of the 3 pairs
    assert _inversions([2, 1, 2, 1]) == 3  # (0,1), (0,3), (2,3); equal values are not inverted
    rng = random.Random(7)
    for _ in range(200):
        seq = [rng.randrange(6) for _ in range(rng.randrange(30))]
        brute = sum(1 for i in range(len(seq)) for j in range(i + 1, len(seq)) if seq[i] > seq[j])
        assert _inversions(seq) == brute


# -- against SciPy ---------------------------------------------------------------------------

WORDS = ["a", "b", "ab", "abc", "B", "Z", "zz", "é", "中", "(1, 'x')", "(1, 'y')", "(10,)",
         "(2,)", "None", ""]


def _random_list(rng: random.Random, n: int, kind: str, distinct: int) -> list:
    if kind == "int":
        return [rng.randrange(-distinct, distinct) for _ in range(n)]
    pool = rng.sample(WORDS, min(distinct, len(WORDS)))
    return [rng.choice(pool) for _ in range(n)]


def _cases(seed: int, count: int) -> list[tuple[list, list]]:
    rng = random.Random(seed)
    cases = []
    for k in range(count):
        n = rng.randint(0, 40)
        kind_x = rng.choice(["int", "str"])
        distinct = rng.choice([1, 2, 3, 4, 6, 10, 40])
        x = _random_list(rng, n, kind_x, distinct)
        mode = k % 5
        if mode == 0:  # a permutation of the same multiset, as the reward's common rows
            y = list(x)
            rng.shuffle(y)
        elif mode == 1:  # unrelated lists of the same kind
            # (not of another kind: SciPy then converts both arrays to one string dtype,
            # so ints are ranked as their decimal strings; the reward compares strings.)
            y = _random_list(rng, n, kind_x, rng.choice([1, 2, 3, 5, 40]))
        elif mode == 2:  # nearly sorted: a few swaps
            y = list(x)
            for _ in range(rng.randint(0, 3)):
                if n >= 2:
                    i, j = rng.randrange(n), rng.randrange(n)
                    y[i], y[j] = y[j], y[i]
        elif mode == 3:  # reversed
            y = list(reversed(x))
        else:  # identical
            y = list(x)
        cases.append((x, y))
    return cases


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_equals_scipy_bit_for_bit(seed: int) -> None:
    mismatches = []
    nan_count = 0
    for x, y in _cases(seed, 1000):
        ours, theirs = kendall_tau_b(x, y), scipy_tau(x, y)
        nan_count += math.isnan(theirs)
        if not same_float(ours, theirs):
            mismatches.append((x, y, ours, theirs))
    assert not mismatches, mismatches[:3]
    assert 0 < nan_count < 1000  # both kinds of case were exercised


def test_equals_scipy_on_sorted_strings_with_many_ties() -> None:
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(2, 40)
        x = sorted(rng.choice("abc") for _ in range(n))
        y = [rng.choice("abcd") for _ in range(n)]
        assert same_float(kendall_tau_b(x, y), scipy_tau(x, y)), (x, y)


def test_large_input_matches_scipy() -> None:
    # 10_000 items: O(n log n) keeps this quick (no timing asserted).
    rng = random.Random(5)
    x = [f"({i:05d},)" for i in range(10_000)]  # zero-padded: string order = numeric order
    y = list(x)
    for _ in range(500):
        i, j = rng.randrange(10_000), rng.randrange(10_000)
        y[i], y[j] = y[j], y[i]
    tau = kendall_tau_b(x, y)
    assert same_float(tau, scipy_tau(x, y))
    assert 0.5 < tau < 1.0
    reversed_tau = kendall_tau_b(x, x[::-1])
    assert same_float(reversed_tau, scipy_tau(x, x[::-1]))
    assert reversed_tau == pytest.approx(-1.0)
    # 10_000 items in order: tot / sqrt(tot) / sqrt(tot) with tot = 49_995_000 pairs
    same_tau = kendall_tau_b(x, x)
    assert same_float(same_tau, scipy_tau(x, x))
    assert same_tau == pytest.approx(1.0)
