"""Helpers shared by the benchmark scripts (run by hand, not by the tests)."""

from __future__ import annotations

import json
import os
import select
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


def timed_run(**config: Any) -> tuple[dict[str, Any], float, list[dict[str, Any]]]:
    """An evaluation run in a temporary folder: its summary, wall seconds and records."""
    from intercode.runner.run import execute, run_config

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        start = time.perf_counter()
        summary = execute(run_config(output=folder, **config), progress=False)
        wall = time.perf_counter() - start
        lines = (folder / "results.jsonl").read_text().splitlines()
    return summary, wall, [json.loads(line) for line in lines]


def emit(results: dict[str, Any], path: str | None) -> None:
    """Print a benchmark's results as JSON, and write them to ``path`` if given."""
    text = json.dumps(results, indent=2)
    print(text)
    if path:
        Path(path).write_text(text + "\n")
