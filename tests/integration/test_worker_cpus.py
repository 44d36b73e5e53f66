"""A pinned run's workers and their sandboxes' commands keep one CPU each, a worker that
replaces a dead one takes its CPU, and an unpinned run's commands may use every CPU."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from intercode.runner.executors import LocalExecutor
from intercode.runner.worker import WorkerSpec

ASK = "grep Cpus_allowed_list /proc/self/status"


def cpus_of(observation: str) -> set[int]:
    """The CPUs of a ``Cpus_allowed_list:\\t0-1,3`` line."""
    listed = observation.split(":", 1)[1].strip()
    found: set[int] = set()
    for part in listed.split(","):
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def replay_file(path: Path, actions: list[str]) -> Path:
    with path.open("w") as fh:
        for task, action in enumerate(actions):
            turns = [{"action": action, "observation": "", "reward": 0}]
            fh.write(json.dumps({"task": task, "status": "ok", "reward": 0,
                                 "turns": turns}) + "\n")
    return path


def usable() -> set[int]:
    return os.sched_getaffinity(0)


needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU")


@needs_two
def test_each_pinned_worker_and_its_commands_keep_a_cpu_of_their_own(tmp_path):
    traj = replay_file(tmp_path / "ask.jsonl", [ASK] * 6)
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    got: list[dict] = []
    LocalExecutor(spec, workers=2, cpu_pinning="on").run(list(range(6)), got.append)
    by_worker: dict[int, set[int]] = {}
    for rec in got:
        assert rec["status"] == "ok", rec["error"]
        seen = cpus_of(rec["turns"][0]["observation"])
        assert len(seen) == 1
        by_worker.setdefault(rec["worker"], set()).update(seen)
    assert all(len(cpus) == 1 for cpus in by_worker.values())
    if len(by_worker) == 2:  # (a quick worker may have served every task)
        first, second = by_worker.values()
        assert first != second
    assert set().union(*by_worker.values()) <= usable()


def test_an_unpinned_run_leaves_its_commands_every_cpu(tmp_path):
    traj = replay_file(tmp_path / "ask.jsonl", [ASK] * 2)
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    got: list[dict] = []
    LocalExecutor(spec, workers=2, cpu_pinning="off").run([0, 1], got.append)
    assert [cpus_of(r["turns"][0]["observation"]) for r in got] == [usable(), usable()]


@needs_two
def test_the_worker_that_replaces_a_dead_one_takes_its_cpu(tmp_path):
    # task 0 ends first, while task 1 (2 s) surely runs in the other worker, which dies
    traj = replay_file(tmp_path / "ask.jsonl",
                       [ASK, f"{ASK}; sleep 2", *[ASK] * 4])
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    executor = LocalExecutor(spec, workers=2, cpu_pinning="on")
    got: list[dict] = []
    victim_cpu: list[int | None] = []

    def on_record(rec: dict) -> None:
        got.append(rec)
        if not victim_cpu:
            victim = next(w for w in executor._pool
                          if w.task is not None and w.task != rec["task"])
            victim_cpu.append(victim.cpu)
            os.kill(victim.proc.pid, signal.SIGKILL)

    executor.run(list(range(6)), on_record)
    assert victim_cpu[0] is not None
    dead = [r for r in got if r["status"] == "error"]
    assert len(dead) == 1 and "worker process died" in dead[0]["error"]
    replacement = [r for r in got if r["worker"] == 2 and r["status"] == "ok"]
    assert replacement  # it ran the tasks the dead one left
    for rec in replacement:
        assert cpus_of(rec["turns"][0]["observation"]) == {victim_cpu[0]}
