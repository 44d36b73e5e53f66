"""The run's executor is handed in (``RunConfig.executor``): the runner uses the one it is
given, records it, and lets it refuse a run before anything is written."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from intercode.envs.settings import EnvSettings
from intercode.errors import ConfigError
from intercode.runner.executors import (
    Executor,
    ExecutorFactory,
    LocalExecutorFactory,
    OnRecord,
    OnRoot,
    error_record,
)
from intercode.runner.run import RunConfig, execute
from intercode.runner.worker import WorkerSpec


@dataclass
class _Elsewhere:
    spec: WorkerSpec
    on_root: OnRoot
    ran: list[int]

    def run(self, tasks: Sequence[int], on_record: OnRecord) -> None:
        self.on_root({"kind": "host", "path": "/"})  # what its nodes mount
        for task in tasks:
            self.ran.append(task)
            on_record(error_record(self.spec, task, 0, "ran elsewhere"))


@dataclass(frozen=True)
class Elsewhere(ExecutorFactory):
    """Episodes "on other machines": each becomes an error record, nothing is started."""

    where: str = "the moon"
    ran: list[int] = field(default_factory=list, compare=False, hash=False)
    name: ClassVar[str] = "elsewhere"
    runs_here: ClassVar[bool] = False

    def check(self, agent: str, settings: EnvSettings) -> None:
        if agent == "human":
            raise ConfigError("not with a person at this terminal")

    def recorded(self) -> dict[str, Any]:
        return {"elsewhere_at": self.where}

    def __call__(self, spec: WorkerSpec, workers: int, on_root: OnRoot) -> Executor:
        return _Elsewhere(spec, on_root, self.ran)


def test_the_given_executor_runs_the_episodes_and_is_recorded(tmp_path):
    chosen = Elsewhere()
    summary = execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", tasks=(0, 2),
                                output=tmp_path / "run", executor=chosen), progress=False)
    assert chosen.ran == [0, 2] and summary["errors"] == 2
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["executor"] == "elsewhere" and config["elsewhere_at"] == "the moon"
    assert config["rootfs"] == {"kind": "host", "path": "/"}  # as the executor reported it
    records = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert [json.loads(r)["error"] for r in records] == ["ran elsewhere"] * 2


def test_the_executor_refuses_a_run_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError, match="not with a person at this terminal"):
        execute(RunConfig(env="bash", dataset="bash-demo", agent="human", tasks=(0,),
                          output=tmp_path / "run", executor=Elsewhere()), progress=False)
    assert not (tmp_path / "run").exists()


def test_an_executor_named_by_a_string_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="executor must be an ExecutorFactory") as caught:
        execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", tasks=(0,),
                          output=tmp_path / "run", executor="ray"),  # type: ignore[arg-type]
                progress=False)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "run").exists()


def test_the_default_is_local_worker_processes(tmp_path):
    cfg = RunConfig(env="bash", dataset="bash-demo", agent="gold", output=tmp_path / "run")
    assert cfg.executor == LocalExecutorFactory() and cfg.executor.runs_here
    assert cfg.executor.name == "local"
    assert cfg.executor.recorded() == {"cpu_pinning": "auto"}


@dataclass
class _Interrupted(_Elsewhere):
    def run(self, tasks: Sequence[int], on_record: OnRecord) -> None:
        super().run(tasks[:1], on_record)
        raise KeyboardInterrupt  # Ctrl-C after the first record


@dataclass(frozen=True)
class InterruptedElsewhere(Elsewhere):
    def __call__(self, spec: WorkerSpec, workers: int, on_root: OnRoot) -> Executor:
        return _Interrupted(spec, on_root, self.ran)


def test_a_run_stopped_by_ctrl_c_still_says_its_results_could_not_be_synced(
        tmp_path, monkeypatch, caplog):
    """The run's own error (here Ctrl-C) is the one raised; a results file that could not
    be synced meanwhile is still said, naming the file, and the summary written."""
    from intercode.runner import syncer

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(syncer.os, "fsync", failing_fsync)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", tasks=(0, 1),
                          output=out, executor=InterruptedElsewhere()), progress=False)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("Input/output error" in w and str(out / "results.jsonl") in w for w in warned)
    assert json.loads((out / "summary.json").read_text())["finished"] == 1
