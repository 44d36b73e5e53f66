"""The statistics of a paired comparison: the exact McNemar test and a bootstrap interval.

No scipy: the p-value is computed with integers (exact at any size, its logarithm given
too for values below the smallest float), the bootstrap with a seeded numpy generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["bootstrap_means", "mcnemar_exact", "percentile_interval"]

CHUNK = 1 << 20  # resampled task indices held at once (8 MB)


@dataclass(frozen=True)
class McNemar:
    """An exact McNemar test's two-sided p-value (``log10_p`` stays exact where ``p``
    underflows to 0.0, below about 1e-308)."""

    p: float
    log10_p: float


def mcnemar_exact(b: int, c: int) -> McNemar:
    """Two-sided exact McNemar test on ``b`` and ``c`` discordant pairs: under the null
    the ``b + c`` discordant pairs fall either way with probability 1/2, and
    p = min(1, 2 P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2); p = 1 when none."""
    if b < 0 or c < 0:
        raise ValueError(f"counts must not be negative, got {b} and {c}")
    n = b + c
    tail = 0  # sum of C(n, i) for i <= min(b, c), exactly
    term = 1
    for i in range(min(b, c) + 1):
        tail += term
        term = term * (n - i) // (i + 1)
    numerator, denominator = 2 * tail, 1 << n
    if numerator >= denominator:
        return McNemar(1.0, 0.0)
    # int / int is correctly rounded, whatever the sizes (0.0 only below the float range)
    return McNemar(numerator / denominator, math.log10(numerator) - n * math.log10(2))


def bootstrap_means(values: npt.NDArray[np.float64], resamples: int,
                    seed: int) -> npt.NDArray[np.float64]:
    """Means of ``resamples`` bootstrap resamples of the columns (tasks) of ``values``
    (one row per statistic): every row is resampled with the same tasks, so paired
    quantities stay paired. Returns an array of shape (rows, resamples)."""
    rows, n = values.shape
    if n == 0:
        raise ValueError("nothing to resample")
    rng = np.random.default_rng(seed)
    out = np.empty((rows, resamples))
    step = max(1, CHUNK // n)
    for start in range(0, resamples, step):
        count = min(step, resamples - start)
        picks = rng.integers(0, n, size=(count, n), dtype=np.intp)
        for row in range(rows):
            out[row, start:start + count] = np.take(values[row], picks).mean(axis=1)
    return out


def percentile_interval(means: npt.NDArray[np.float64],
                        confidence: float) -> tuple[float, float]:
    """The bootstrap percentile interval of one statistic's resampled means."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)
