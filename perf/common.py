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


def descendants_cpu_s() -> float:
    """CPU seconds of this process's descendants, living ones and those they reaped."""
    parents: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    me, ticks = os.getpid(), 0
    for pid, (_, cpu) in parents.items():
        up = pid
        while up in parents and up not in (me, 0, 1):
            up = parents[up][0]
        if up == me and pid != me:
            ticks += cpu
    return ticks / os.sysconf("SC_CLK_TCK")


def episode(env: Any, index: int, answer: Callable[[Any], str] | None = None) -> None:
    """Reset to task ``index``, its gold (or ``answer(task)``) as the one action, submit."""
    env.reset(options={"task": index})
    env.step(env.task.gold if answer is None else answer(env.task))
    env.step("submit")


def cached_gold_tasks(env: Any) -> tuple[list[int], list[int]]:
    """A Bash environment's tasks whose gold result is stored and whose episode takes
    under 0.5 s, and the slower ones (the walkers), after every task's gold episode ran
    twice (which fills the gold cache: some results are stored only once confirmed)."""
    slow: set[int] = set()
    for _ in range(2):
        for index in range(len(env.dataset)):
            start = time.perf_counter()
            episode(env, index)
            if time.perf_counter() - start > 0.5:
                slow.add(index)
    fast = [i for i in range(len(env.dataset))
            if i not in slow and env._gold_key(env.dataset[i]) is not None]
    return fast, sorted(slow)


def episode_cpu_whole(env: Any, picks: list[int],
                      answer: Callable[[Any], str] | None = None) -> float:
    """Mean CPU milliseconds per episode of ``picks``, this process's and its
    sandboxes', measured around the whole loop: nothing else runs between episodes (the
    phase split below walks ``/proc`` between phases, which costs the episodes some of
    their caches)."""
    box0, host0 = descendants_cpu_s(), time.process_time()
    for index in picks:
        episode(env, index, answer)
    host = time.process_time() - host0
    return 1000 * (host + descendants_cpu_s() - box0) / len(picks)


def episode_cpu_split(env: Any, picks: list[int]) -> dict[str, dict[str, float]]:
    """Mean CPU per episode (reset to the task, its gold as the one action, submit) of
    ``picks``, by phase: this process's and its sandboxes' (``descendants_cpu_s``; a
    process's CPU counts when it is reaped, so an interpreter's shows up at the reset
    that replaces it: only the whole is exact)."""
    phases = ("reset", "action", "submit")
    host = dict.fromkeys(phases, 0.0)
    boxes = dict.fromkeys(phases, 0.0)
    for index in picks:
        for phase in phases:
            box0, host0 = descendants_cpu_s(), time.process_time()
            if phase == "reset":
                env.reset(options={"task": index})
            elif phase == "action":
                env.step(env.task.gold)
            else:
                env.step("submit")
            host[phase] += time.process_time() - host0
            boxes[phase] += descendants_cpu_s() - box0
    n = len(picks)
    return {p: {"host_ms": 1000 * host[p] / n, "sandbox_ms": 1000 * boxes[p] / n}
            for p in phases}
