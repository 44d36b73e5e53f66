"""The five benchmarks intercode ships, registered like any plugin."""

from __future__ import annotations

from intercode.benchmarks import bash, ctf, python, sql, swe

__all__ = ["BENCHMARKS"]

BENCHMARKS = (bash.BENCHMARK, sql.BENCHMARK, python.BENCHMARK, ctf.BENCHMARK, swe.BENCHMARK)
