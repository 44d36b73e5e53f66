"""A CPU of its own for each worker of a run that keeps the machine busy.

A worker hands each step of an episode to its sandbox (the supervisor, the shell, the
commands) and waits for it: one chain of processes, each waking the next. Two such
chains on two CPUs, left to the scheduler, wake each other's processes on the other's
CPU and leave a CPU idle meanwhile; with each worker (and so its sandboxes, which
inherit it) kept on one CPU, warm gold runs of NL2Bash (its walkers left out) and of
MBPP finished 5-16% more episodes per second on two cores (``perf/RESULTS.md``). The
price is a command's parallelism: a pipeline or a threaded program gets that one CPU,
and a sandbox sees one CPU (``nproc``; the gold caches' keys hold that count). So the
default (``auto``) pins only where every CPU is a worker's anyway: a run whose agent
calls no model (gold, replay, noop: no waits) that starts one worker per CPU the
command may use (``taskset`` chooses them), on the bwrap sandbox (Docker's containers
are not the worker's children). ``on`` pins the workers of every run that has them
(round robin when there are more workers than CPUs) and ``off`` none. A pin is a place,
not a limit: the agent's commands may move themselves to another CPU (``taskset``), as
they may use every CPU unpinned.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from intercode.agents.names import AGENTS, STRATEGIES
from intercode.errors import ConfigError

__all__ = ["MODES", "check", "choose", "pin", "plan", "usable_cpus"]

MODES = ("auto", "on", "off")
# the agents that call no model and need no person: their episodes keep the worker and
# its sandbox busy
_BUSY_AGENTS = frozenset(AGENTS) - frozenset(STRATEGIES) - {"human"}


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity), in order; none where unknown."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return []


def check(mode: object) -> str:
    """``mode`` if it is one of :data:`MODES`, else a one-line :class:`ConfigError`."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ConfigError(f"cpu_pinning must be one of {', '.join(MODES)}, not {mode!r}")
    return mode


def plan(mode: str, workers: int, agent: str, sandbox: str,
         cpus: Sequence[int]) -> list[int]:
    """The CPUs the ``workers`` a run starts are pinned to, shared among them in this
    order (see :func:`choose`), of ``cpus`` (the run's: :func:`usable_cpus`); empty:
    none is pinned."""
    check(mode)
    cpus = list(cpus)
    if mode == "off" or len(cpus) < 2:
        return []
    if mode == "auto" and (agent not in _BUSY_AGENTS or sandbox != "bwrap"
                           or workers != len(cpus)):
        return []
    return cpus


def choose(cpus: Sequence[int], taken: Sequence[int | None]) -> int | None:
    """The CPU for a new worker: of ``cpus``, the first that the fewest live workers
    (``taken``: their CPUs) hold, so that a worker that replaces a dead one gets its
    CPU; ``None`` when there are none."""
    if not cpus:
        return None
    held = list(taken)
    return cpus[min(range(len(cpus)), key=lambda i: (held.count(cpus[i]), i))]


def pin(cpus: Sequence[int]) -> None:
    """Keep this process (and what it starts from now on) on ``cpus``: a worker's one CPU,
    or the run's CPUs for a worker that is not pinned (a worker forked from a server that
    started earlier has the server's). A CPU that went offline meanwhile, or a policy
    that refuses, leaves it where it was; none given: where it is."""
    if not cpus:
        return
    try:
        os.sched_setaffinity(0, set(cpus))
    except OSError:
        pass
