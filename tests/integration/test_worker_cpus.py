"""A pinned run's workers and their sandboxes' commands keep one CPU each, a worker that
replaces a dead one takes its CPU, and an unpinned run's commands may use every CPU."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from gold_helpers import entries

from intercode.cli import main
from intercode.runner.executors import LocalExecutor
from intercode.runner.worker import WorkerSpec

# the docker backend's containers are not the workers' children: they are never pinned
pytestmark = pytest.mark.skipif(os.environ.get("INTERCODE_TEST_SANDBOX") == "docker",
                                reason="bwrap's sandboxes only")

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


needs_two = pytest.mark.skipif(len(getattr(os, "sched_getaffinity", lambda _: ())(0)) < 2,
                               reason="one CPU")


@pytest.fixture
def two_cpus() -> Iterator[set[int]]:
    """This process on two of its CPUs (as under ``taskset``), for the run it starts."""
    before = os.sched_getaffinity(0)
    chosen = set(sorted(before)[:2])
    os.sched_setaffinity(0, chosen)
    try:
        yield chosen
    finally:
        os.sched_setaffinity(0, before)


def cli_run(tmp_path: Path, name: str, *args: str) -> tuple[dict, list[dict]]:
    """``intercode eval`` (in this process); its config.json and records."""
    out = tmp_path / name
    assert main(["eval", "bash", "--no-progress", "--output", str(out), *args]) == 0
    lines = (out / "results.jsonl").read_text().splitlines()
    return json.loads((out / "config.json").read_text()), [json.loads(x) for x in lines]


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
    # task 0 ends first, while task 1 (2 s) surely runs in the other worker, which dies;
    # the others take 0.5 s each, so that the first worker cannot have run them all
    # before the death is seen (the queue then still holds tasks for the replacement)
    traj = replay_file(tmp_path / "ask.jsonl",
                       [ASK, f"{ASK}; sleep 2", *[f"{ASK}; sleep 0.5"] * 4])
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    executor = LocalExecutor(spec, workers=2, cpu_pinning="on")
    got: list[dict] = []
    victim_cpu: list[int | None] = []

    def on_record(rec: dict) -> None:
        got.append(rec)
        if not victim_cpu:  # the worker in task 1's sleep (the other has its next tasks)
            victim = next(w for w in executor._pool if 1 in w.tasks)
            victim_cpu.append(victim.cpu)
            os.kill(victim.proc.pid, signal.SIGKILL)

    executor.run(list(range(6)), on_record)
    assert victim_cpu[0] is not None
    dead = [r for r in got if r["status"] == "error"]
    assert len(dead) == 1 and dead[0]["task"] == 1 and "worker process died" in dead[0]["error"]
    replacement = [r for r in got if r["worker"] == 2 and r["status"] == "ok"]
    assert replacement  # it ran the tasks the dead one left
    for rec in replacement:
        assert cpus_of(rec["turns"][0]["observation"]) == {victim_cpu[0]}


@needs_two
@pytest.mark.parametrize(("flag", "workers", "pinned"), [
    (None, 2, True),       # auto: a replay run with a worker per CPU
    (None, 1, False),      # auto: fewer workers than CPUs
    ("auto", 2, True),
    ("on", 1, True),
    ("off", 2, False),
])
def test_the_command_line_pins_as_asked(tmp_path, two_cpus, flag, workers, pinned):
    traj = replay_file(tmp_path / "ask.jsonl", [ASK] * 4)
    chosen = [] if flag is None else ["--cpu-pinning", flag]
    config, recs = cli_run(tmp_path, "run", "--dataset", "bash-demo", "--agent", "replay",
                           "--trajectories", str(traj), "--tasks", "0-3",
                           "--workers", str(workers), *chosen)
    assert config["cpu_pinning"] == (flag or "auto")
    seen = [cpus_of(r["turns"][0]["observation"]) for r in recs]
    assert len(seen) == 4
    if pinned:
        assert all(len(cpus) == 1 and cpus <= two_cpus for cpus in seen)
    else:
        assert all(cpus == two_cpus for cpus in seen)


def test_a_run_of_one_task_leaves_the_other_cpu_to_its_commands(tmp_path, two_cpus):
    """auto plans for the workers a run starts (one here), not for ``--workers``."""
    traj = replay_file(tmp_path / "ask.jsonl", [ASK])
    _config, recs = cli_run(tmp_path, "run", "--dataset", "bash-demo", "--agent", "replay",
                            "--trajectories", str(traj), "--tasks", "0", "--workers", "2")
    assert cpus_of(recs[0]["turns"][0]["observation"]) == two_cpus


@needs_two
def test_a_gold_that_counts_its_cpus_is_not_reused_across_pinned_and_unpinned_runs(
        tmp_path, two_cpus, gold_cache_dir):
    """The gold cache's key holds the number of CPUs a sandbox sees: a gold result kept
    by a pinned run (``nproc``: 1) does not score an unpinned run's same answer (2), and
    is used again by the next pinned run."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": i, "query": "How many CPUs may you use?",
                                         "gold": f"nproc; echo {i}"}) + "\n"
                             for i in range(2)))
    kept = []
    for name, args in (("pinned", ["--workers", "2", "--cpu-pinning", "on"]),
                       ("unpinned", ["--workers", "1", "--cpu-pinning", "off"]),
                       ("pinned-again", ["--workers", "2", "--cpu-pinning", "on"])):
        _config, recs = cli_run(tmp_path, name, "--dataset", str(tasks), "--agent", "gold",
                                *args)
        assert [r["reward"] for r in recs] == [1.0, 1.0], name
        answers = {r["turns"][0]["observation"].split()[0] for r in recs}
        assert answers == ({"2"} if name == "unpinned" else {"1"})
        kept.append(len(entries(gold_cache_dir)))
    assert kept == [2, 4, 4]  # each CPU count's own entries; the pinned ones used again


def test_both_gold_caches_keys_hold_the_cpus_a_sandbox_sees(gold_cache_dir):
    from intercode.envs.bash import BashEnv
    from intercode.envs.python import PythonEnv

    bash, python = BashEnv("bash-demo"), PythonEnv("mbpp-prompt", test_timeout=2.0)
    try:
        bash.reset(options={"task": 0})
        bash_key = bash._gold_key(bash.task)
        python.reset(options={"task": 0})
        python_key = python._store_key(python._gold_request())
    finally:
        bash.close()
        python.close()
    assert bash_key is not None
    assert bash_key["cpus"] == python_key["cpus"] == len(usable())


@needs_two
def test_an_unpinned_worker_takes_the_runs_cpus_not_its_fork_servers(tmp_path):
    """The workers' fork server lives as long as this process, with the CPUs it started
    with; a later run on other CPUs (``taskset`` of a caller) gets its own."""
    traj = replay_file(tmp_path / "ask.jsonl", [ASK] * 2)
    args = ["--dataset", "bash-demo", "--agent", "replay", "--trajectories", str(traj),
            "--tasks", "0-1", "--workers", "2", "--cpu-pinning", "off"]
    before = os.sched_getaffinity(0)
    _config, recs = cli_run(tmp_path, "all", *args)  # (the server runs from here on)
    assert [cpus_of(r["turns"][0]["observation"]) for r in recs] == [before, before]
    fewer = set(sorted(before)[-1:])
    os.sched_setaffinity(0, fewer)
    try:
        _config, recs = cli_run(tmp_path, "fewer", *args)
    finally:
        os.sched_setaffinity(0, before)
    assert [cpus_of(r["turns"][0]["observation"]) for r in recs] == [fewer, fewer]
    _config, recs = cli_run(tmp_path, "all-again", *args)
    assert [cpus_of(r["turns"][0]["observation"]) for r in recs] == [before, before]
