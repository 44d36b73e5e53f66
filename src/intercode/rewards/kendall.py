"""Kendall's tau-b of two sequences, as ``scipy.stats.kendalltau(x, y).statistic``.

Upstream scales the SQL reward by the tau of the common rows' order. This computes the
same value without SciPy (a test compares the two): counts of tied and discordant
pairs in O(n log n), then ``(P - Q) / sqrt(n0 - n1) / sqrt(n0 - n2)`` in SciPy's order
of operations, clipped to [-1, 1]. ``nan`` when every pair is tied on a side (for
example fewer than two items).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

__all__ = ["kendall_tau_b"]


def _dense_ranks(values: Sequence[Hashable]) -> list[int]:
    order = {v: i for i, v in enumerate(sorted(set(values)))}  # type: ignore[type-var]
    return [order[v] for v in values]


def _ties(values: Sequence[int]) -> int:
    return sum(c * (c - 1) // 2 for c in Counter(values).values())


def _inversions(seq: list[int]) -> int:
    """Pairs i < j with seq[i] > seq[j] (merge sort)."""
    if len(seq) < 2:
        return 0
    width, count, data = 1, 0, list(seq)
    n = len(data)
    buf = [0] * n
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if data[j] < data[i]:
                    count += mid - i
                    buf[k] = data[j]
                    j += 1
                else:
                    buf[k] = data[i]
                    i += 1
                k += 1
            buf[k:k + mid - i] = data[i:mid]
            k += mid - i
            buf[k:k + hi - j] = data[j:hi]
        data, buf = buf, data
        width *= 2
    return count


def kendall_tau_b(x: Sequence[Hashable], y: Sequence[Hashable]) -> float:
    """Tau-b of paired sequences of comparable values (same length)."""
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    n = len(x)
    rx, ry = _dense_ranks(x), _dense_ranks(y)
    total = n * (n - 1) // 2
    x_ties, y_ties = _ties(rx), _ties(ry)
    if x_ties == total or y_ties == total:
        return math.nan
    both_ties = _ties([a * (n + 1) + b for a, b in zip(rx, ry, strict=True)])
    pairs = sorted(zip(rx, ry, strict=True))
    discordant = _inversions([b for _, b in pairs])
    con_minus_dis = total - x_ties - y_ties + both_ties - 2 * discordant
    tau = con_minus_dis / math.sqrt(total - x_ties) / math.sqrt(total - y_ties)
    return min(1.0, max(-1.0, tau))
