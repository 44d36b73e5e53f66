"""Snapshot + restore and fork latency, memory per live snapshot, and growth over cycles.

Run by hand:  python perf/bench_snapshot.py [--envs bash,python,sql,mysql] [--cycles 10000]
              [--repeat 200] [--live 20] [--json out.json]

``mysql`` is the SQL environment on the MySQL backend (the server of
``INTERCODE_MYSQL_URL`` or ``--mysql-url``; ``scripts/mariadb-start`` starts one); its
copies live in the server, so its memory figures are the host's only, and its cycles
are capped by ``--mysql-cycles`` (a cycle copies databases: tens of milliseconds).

For each environment, on task 0 of its test dataset, after a few actions that change
state (Bash: a few files, a directory, shell variables; Python: a namespace; SQLite:
rows in a table and a temporary table):

- ``snap_restore_ms``: median of ``snapshot()`` + ``restore()`` + ``release()``;
- ``snap_restore_step_ms``: the same followed by one read-only ``step()`` (``READ``),
  minus the median of that step alone (``step_ms``): what a restore costs the episode
  when work a restore leaves for later (SQLite opens a restored database on first
  use) is counted too;
- ``fork_ms``: median of ``fork()`` (the warm spare the environment keeps, begun by the
  previous fork or given back by the close of the last one, prepared in the background;
  the first fork starts a new environment: ``fork_first_ms``), back to back in a loop
  of fork, ``warm_up()`` of the fork, ``fork(into=...)`` into it, close;
- ``fork_step_ms``: median of ``fork()`` right after a read-only ``step()`` of the parent
  (then the fork is closed): the spare was prepared before that step (a Python spare
  replayed the episode's actions but that one, which the fork replays);
- ``fork_into_warm_ms``: median of ``fork(into=env2)`` into a started environment (a
  warm pool);
- ``mem_per_snapshot_kib``: growth of the sandbox's memory (proportional set size where
  the kernel shows it, else resident) and the host's with ``--live`` live snapshots,
  per snapshot;
- ``growth_host_kib`` / ``growth_sandbox_kib``: this process's memory and the sandbox's
  after ``--cycles`` snapshot/restore/release cycles,
  minus after the first tenth of them (memory returned after release: near 0); each
  the least of 5 samples, so that a process being forked at that moment (the spare
  interpreter or engine) is not counted as growth.

Goals: Bash ≤ 5 ms, Python ≤ 5 ms, SQLite ≤ 1 ms, fork ≤ 20 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

SETUP = {
    "bash": ["mkdir -p /tmp/w && cd /tmp/w", "echo one > a; echo two > b; seq 1000 > c",
             "X=5; f() { echo $X; }"],
    "ctf": ["echo one > a; echo two > b", "X=5"],
    "python": ["x = list(range(1000))", "def f(a): return a + len(x)",
               "y = {i: str(i) for i in x}"],
    "sql": ["CREATE TABLE t(a)", "INSERT INTO t VALUES (1), (2), (3)",
            "CREATE TEMP TABLE tt(b)", "INSERT INTO tt VALUES ('x')"],
    "mysql": ["CREATE TABLE t(a INT)", "INSERT INTO t VALUES (1), (2), (3)",
              "SET @v = 'x', SESSION sql_mode = 'ANSI_QUOTES'"],
}
READ = {"bash": "echo $X", "ctf": "echo $X", "python": "len(x)", "sql": "SELECT count(*) FROM t",
        "mysql": "SELECT count(*) FROM t"}
MYSQL_URL = os.environ.get("INTERCODE_MYSQL_URL", "")


SAMPLES = 5  # memory samples at the start and at the end of the cycles


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (host pids)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            ppid = int(data[data.rfind(b")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(name))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def memory_kib(pid: int) -> int:
    """Proportional set size of ``pid`` if readable, else its resident size."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def boxes(env: object) -> list[object]:
    """The agent's sandbox of an environment (or its SQL engine's)."""
    for attr in ("_agent", "_box"):
        box = getattr(env, attr, None)
        if box is not None and hasattr(box, "_proc"):
            return [box]
        if box is not None and hasattr(box, "_box"):
            return [box._box]
    agent = getattr(env, "_boxes", {}).get("agent")
    return [agent] if agent is not None else []


def sandbox_kib(env: object) -> int:
    """Memory of the agent's sandbox processes."""
    total = 0
    for box in boxes(env):
        proc = getattr(box, "_proc", None)
        if proc is not None:
            total += sum(memory_kib(p) for p in descendants(proc.pid))
    return total


def total_kib(env: object) -> int:
    """Memory of the agent's sandbox processes plus this process."""
    return memory_kib(os.getpid()) + sandbox_kib(env)


def measure(name: str, repeat: int, live: int, cycles: int) -> dict[str, object]:
    import intercode
    from intercode import testing

    if name == "mysql":
        env = intercode.make("sql", dataset=testing.small_dataset("sql"), backend="mysql",
                             mysql_url=MYSQL_URL).unwrapped
    else:
        env = intercode.make(name, dataset=testing.small_dataset(name)).unwrapped
    try:
        env.reset(options={"task": 0})
        for action in SETUP[name]:
            env.step(action)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            snap = env.snapshot()
            env.restore(snap)
            snap.release()
            times.append(time.perf_counter() - t0)
        steps, with_step = [], []
        for _ in range(max(3, repeat // 4)):
            t0 = time.perf_counter()
            env.step(READ[name])
            steps.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            snap = env.snapshot()
            env.restore(snap)
            snap.release()
            env.step(READ[name])
            with_step.append(time.perf_counter() - t0)
        forks, warm = [], []
        for _ in range(max(3, repeat // 20)):
            t0 = time.perf_counter()
            fork = env.fork()
            forks.append(time.perf_counter() - t0)
            fork.warm_up()
            t0 = time.perf_counter()
            env.fork(into=fork)
            warm.append(time.perf_counter() - t0)
            fork.close()
        after_step = []
        for _ in range(max(3, repeat // 20)):
            env.step(READ[name])
            t0 = time.perf_counter()
            fork = env.fork()
            after_step.append(time.perf_counter() - t0)
            fork.close()
        env.step(SETUP[name][-1])
        before = total_kib(env)
        held = [env.snapshot() for _ in range(live)]
        with_live = total_kib(env)
        for snap in held:
            snap.release()
        settle = cycles // 10  # allocators settle first
        samples: dict[str, list[tuple[int, int]]] = {"start": [], "end": []}
        for i in range(cycles):
            if settle <= i < settle + SAMPLES:
                samples["start"].append((memory_kib(os.getpid()), sandbox_kib(env)))
            if i >= cycles - SAMPLES:
                samples["end"].append((memory_kib(os.getpid()), sandbox_kib(env)))
            snap = env.snapshot()
            env.restore(snap)
            snap.release()
        # the least of a few samples: a spare process being forked is not a leak
        host = [min(h for h, _ in samples[k] or [(0, 0)]) for k in ("start", "end")]
        box = [min(b for _, b in samples[k] or [(0, 0)]) for k in ("start", "end")]
        return {"env": name, "snap_restore_ms": round(1000 * statistics.median(times), 3),
                "snap_restore_p90_ms": round(1000 * sorted(times)[int(0.9 * len(times))], 3),
                "snap_restore_step_ms": round(1000 * (statistics.median(with_step)
                                                      - statistics.median(steps)), 3),
                "step_ms": round(1000 * statistics.median(steps), 3),
                "fork_ms": round(1000 * statistics.median(forks), 1),
                "fork_first_ms": round(1000 * forks[0], 1),
                "fork_step_ms": round(1000 * statistics.median(after_step), 1),
                "fork_into_warm_ms": round(1000 * statistics.median(warm), 1),
                "mem_per_snapshot_kib": round((with_live - before) / live, 1),
                "cycles": cycles, "growth_host_kib": host[1] - host[0],
                "growth_sandbox_kib": box[1] - box[0]}
    finally:
        env.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="bash,python,sql")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--live", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--mysql-cycles", type=int, default=300)
    parser.add_argument("--mysql-url", default=os.environ.get("INTERCODE_MYSQL_URL", ""))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    global MYSQL_URL
    MYSQL_URL = args.mysql_url
    rows = []
    for name in args.envs.split(","):
        if name == "mysql" and not MYSQL_URL:
            print("mysql: skipped (no --mysql-url / INTERCODE_MYSQL_URL)", file=sys.stderr)
            continue
        cycles = min(args.cycles, args.mysql_cycles) if name == "mysql" else args.cycles
        repeat = min(args.repeat, 50) if name == "mysql" else args.repeat
        row = measure(name, repeat, args.live, cycles)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
