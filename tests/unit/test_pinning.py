"""Which CPUs a run's workers keep: the rule, the choice for a new worker, the pin itself,
and the command line's and ``config.json``'s side of it."""

from __future__ import annotations

import os

import pytest

from intercode.cli import main
from intercode.errors import ConfigError
from intercode.runner import pinning
from intercode.runner.executors import LocalExecutor, LocalExecutorFactory
from intercode.runner.worker import WorkerSpec


@pytest.fixture
def four_cpus() -> list[int]:
    return [0, 2, 5, 7]


def test_the_busy_agents_are_those_that_call_no_model_and_need_no_person():
    assert sorted(pinning._BUSY_AGENTS) == ["gold", "noop", "replay"]


@pytest.mark.parametrize("agent", ["gold", "replay", "noop"])
def test_auto_pins_a_busy_run_with_a_worker_per_cpu(four_cpus, agent):
    assert pinning.plan("auto", 4, agent, "bwrap", four_cpus) == [0, 2, 5, 7]


@pytest.mark.parametrize(("workers", "agent", "sandbox"), [
    (3, "gold", "bwrap"),        # fewer workers than CPUs: others' work may need the rest
    (8, "gold", "bwrap"),        # more: the scheduler balances them better
    (4, "react", "bwrap"),       # a model's agent waits: its commands may use every CPU
    (4, "try-again", "bwrap"),
    (4, "human", "bwrap"),
    (4, "gold", "docker"),       # the containers are not the worker's children
])
def test_auto_leaves_other_runs_to_the_scheduler(four_cpus, workers, agent, sandbox):
    assert pinning.plan("auto", workers, agent, sandbox, four_cpus) == []


@pytest.mark.parametrize(("workers", "agent", "sandbox"), [
    (1, "gold", "bwrap"), (9, "react", "docker"), (4, "human", "bwrap")])
def test_on_and_off_pin_every_run_and_none(four_cpus, workers, agent, sandbox):
    assert pinning.plan("on", workers, agent, sandbox, four_cpus) == [0, 2, 5, 7]
    assert pinning.plan("off", workers, agent, sandbox, four_cpus) == []


@pytest.mark.parametrize("cpus", [[], [3]])
def test_one_cpu_or_an_unknown_affinity_pins_nothing(cpus):
    for mode in ("auto", "on"):
        assert pinning.plan(mode, len(cpus) or 1, "gold", "bwrap", cpus) == []


@pytest.mark.parametrize("mode", ["yes", "ON", None, ["on"], 1])
def test_a_bad_mode_is_one_line_wherever_it_is_given(four_cpus, mode):
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="gold")
    for make in (lambda: pinning.plan(mode, 4, "gold", "bwrap", four_cpus),
                 lambda: LocalExecutorFactory(cpu_pinning=mode),
                 lambda: LocalExecutor(spec, 2, cpu_pinning=mode)):
        with pytest.raises(ConfigError, match="auto, on, off") as caught:
            make()
        assert "\n" not in str(caught.value)


def test_usable_cpus_is_this_process_affinity_or_none(monkeypatch):
    assert pinning.usable_cpus() == sorted(os.sched_getaffinity(0))

    def refused(pid: int) -> set[int]:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "sched_getaffinity", refused)
    assert pinning.usable_cpus() == []


def test_a_new_worker_takes_the_cpu_fewest_workers_hold():
    cpus = [0, 2, 5]
    assert pinning.choose([], []) is None
    assert pinning.choose(cpus, []) == 0
    assert pinning.choose(cpus, [0]) == 2
    assert pinning.choose(cpus, [0, 2]) == 5
    assert pinning.choose(cpus, [0, 5]) == 2  # the replacement of the worker that held 2
    assert pinning.choose(cpus, [0, 2, 5]) == 0  # more workers than CPUs: round robin
    assert pinning.choose(cpus, [0, 2, 5, 0]) == 2
    assert pinning.choose(cpus, [None, 2]) == 0  # an unpinned worker holds none


def _affinity_after(cpus: list[int]) -> set[int]:
    """This process's affinity as a forked child sees it after ``pin(cpus)``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover -- the child
        try:
            pinning.pin(cpus)
            os.write(write, ",".join(map(str, sorted(os.sched_getaffinity(0)))).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as got:
        text = got.read().decode()
    os.waitpid(pid, 0)
    return {int(c) for c in text.split(",")}


def test_pin_keeps_the_process_on_its_cpu_and_tolerates_one_it_cannot_have():
    everything = os.sched_getaffinity(0)
    last = max(everything)
    assert _affinity_after([last]) == {last}
    assert _affinity_after([]) == everything
    assert _affinity_after([4096]) == everything  # no such CPU: it runs where it did
    if len(everything) > 1:  # the run's CPUs, for a worker forked with fewer or more
        assert _affinity_after(sorted(everything)[:1]) == set(sorted(everything)[:1])
    assert os.sched_getaffinity(0) == everything  # (the test's own process is untouched)


def test_the_mode_is_recorded_and_the_flag_is_checked(capsys, tmp_path):
    assert LocalExecutorFactory().recorded() == {"cpu_pinning": "auto"}
    assert LocalExecutorFactory(cpu_pinning="off").recorded() == {"cpu_pinning": "off"}
    with pytest.raises(SystemExit) as bad:
        main(["eval", "bash", "--dataset", "bash-demo", "--cpu-pinning", "sometimes"])
    assert bad.value.code == 2 and "--cpu-pinning" in capsys.readouterr().err
    code = main(["eval", "bash", "--dataset", "bash-demo", "--no-progress", "--executor",
                 "ray", "--cpu-pinning", "on", "--output", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--cpu-pinning applies only to --executor local" in err
    code = main(["eval", "bash", "--dataset", "bash-demo", "--no-progress", "--agent",
                 "human", "--cpu-pinning", "on", "--output", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--agent human plays in this" in err
    assert not (tmp_path / "run").exists()


def test_the_human_agent_refuses_pinned_workers_from_python_too(tmp_path):
    from intercode.runner.run import RunConfig, execute

    cfg = RunConfig(env="bash", dataset="bash-demo", agent="human", output=tmp_path / "run",
                    executor=LocalExecutorFactory(cpu_pinning="on"))
    with pytest.raises(ConfigError, match="the human agent plays in this process"):
        execute(cfg, progress=False)
    assert not (tmp_path / "run").exists()
