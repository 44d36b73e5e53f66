"""Rounding as upstream's numpy floats rounded."""

from __future__ import annotations

__all__ = ["round_like_numpy"]


def round_like_numpy(value: float) -> float:
    """``round(np.float64(value), 2)``: scale by 100, round half to even, scale back.

    Python's ``round(float, 2)`` rounds the exact binary value instead, so the two
    differ at half-cents (numpy gives 0.16 for 0.165, Python 0.17).
    """
    return round(value * 100) / 100
