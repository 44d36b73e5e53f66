"""Helpers shared by the benchmark scripts (run by hand, not by the tests)."""

from __future__ import annotations

import os
import select
import statistics
import subprocess
import time
from collections.abc import Callable


def samples_ms(fn: Callable[[], object], runs: int, warmup: int = 20) -> list[float]:
    """Wall times of ``runs`` calls after ``warmup`` untimed ones, sorted, in ms."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return sorted(samples)


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 20) -> float:
    """Median wall time of ``fn`` in ms."""
    return statistics.median(samples_ms(fn, runs, warmup))


def pipe_floor(argv: list[str], request: bytes, marker: bytes, runs: int) -> float:
    """Median round trip of ``request`` to a persistent process over pipes, until ``marker``."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    fd = proc.stdout.fileno()
    stdin = proc.stdin

    def step() -> None:
        stdin.write(request)
        buf = b""
        while marker not in buf:
            select.select([fd], [], [])
            buf += os.read(fd, 65536)

    try:
        return median_ms(step, runs)
    finally:
        proc.kill()
        proc.wait()
