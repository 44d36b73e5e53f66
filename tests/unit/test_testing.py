"""intercode.testing: the checks pass on the built-ins and fail on broken benchmarks."""

from __future__ import annotations

import dataclasses
import re
from functools import partial
from typing import Any

import pytest

from intercode import testing
from intercode.benchmarks import names, register, unregister
from intercode.benchmarks.spec import Benchmark, Parsing, Prompting
from intercode.datasets.tasks import Dataset, Task
from intercode.envs.base import Evaluation, IntercodeEnv


def _toy_dataset(name: str) -> Dataset:
    tasks = tuple(Task(index=i, query=f"say {w}", gold=f"say {w}", dataset=name,
                       source="toy", source_index=i) for i, w in enumerate(["a", "b", "c"]))
    return Dataset(name=name, env="toy", tasks=tasks, revision="1")


class ToyEnv(IntercodeEnv):
    """A pure-Python environment: ``say <word>`` prints the word; the reward is 1 if the
    last word said is the task's."""

    env_name = "toy"

    def __init__(self, dataset: Any = "toy-basic", render_mode: str | None = None) -> None:
        super().__init__(dataset, render_mode=render_mode)
        self.said = ""

    def load_task(self, task: Task) -> None:
        self.said = ""

    def execute(self, action: str) -> tuple[str, dict[str, Any]]:
        ok = action.startswith("say ")
        if ok:
            self.said = action[4:]
        return (self.said + "\n" if ok else "unknown\n"), {
            "exit_code": 0 if ok else 1, "timed_out": False}

    def evaluate(self) -> Evaluation:
        assert self.task is not None
        right = self.said == self.task.gold[4:]
        return Evaluation(float(right), right, {"reward_parts": {"said": float(right)}})


class WrongName(ToyEnv):
    env_name = "other"


class SubmitDiffers(ToyEnv):
    def submit(self, argument: str | None) -> Evaluation:
        return Evaluation(0.5, False, {"reward_parts": {}})  # not what evaluate() previews


class RewardTooBig(ToyEnv):
    def evaluate(self) -> Evaluation:
        return Evaluation(2.0, True, {"reward_parts": {}})


class WrongQuery(ToyEnv):
    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs.upper(), info


class NoTurnCount(ToyEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        info.pop("turn", None)
        return obs, reward, terminated, truncated, info


TOY = Benchmark(name="toy", env=ToyEnv, datasets={"toy-basic": _toy_dataset},
                default_dataset="toy-basic", parsing=Parsing(),
                prompting=Prompting(language="toy", setting="toy"), echo="say {text}")


@pytest.fixture()
def toy():
    """Registers the toy benchmark with an environment class (unregisters it after)."""
    registered = []

    def make(env: type[IntercodeEnv] = ToyEnv, **changes: Any) -> str:
        register(dataclasses.replace(TOY, env=env, **changes), replace=True)
        registered.append("toy")
        return "toy"

    yield make
    for name in registered:
        unregister(name)


def test_a_sound_benchmark_passes(toy):
    testing.check_benchmark(toy())


@pytest.mark.parametrize(("env", "changes", "message"), [
    (WrongName, {}, "env_name"),
    (SubmitDiffers, {}, "evaluate()"),
    (RewardTooBig, {}, "not in [0, 1]"),
    (WrongQuery, {}, "query"),
    (NoTurnCount, {}, "turn 1"),
    (ToyEnv, {"echo": "shout {text}"}, "printed"),
    (ToyEnv, {"core": RewardTooBig}, "not a subclass of its core"),  # runs would score it
])
def test_a_broken_benchmark_fails_with_a_clear_message(toy, env, changes, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        testing.check_benchmark(toy(env, **changes))


@pytest.mark.parametrize("name", ["bash", "sql", "python", "ctf"])
def test_the_built_ins_pass_check_benchmark(name):
    testing.check_benchmark(name)


def test_golds_of_the_built_ins_pass_on_a_few_tasks():
    report = testing.check_golds("python", "mbpp-prompt", tasks=(0, 1))
    assert report["tasks"] == 2 and report["scored_one"] == 2


def test_check_golds_fails_when_a_gold_does_not_score_one(monkeypatch):
    # the runner's workers are other processes, which see only installed benchmarks: the
    # validation report is faked here
    import intercode.validate

    def validate(env, dataset, **kwargs):
        entry = {"task": 0, "source": "x", "source_index": 0, "gold": "g", "why": "scores 0.5"}
        return {"env": env, "dataset": dataset, "tasks": 1, "scored_one": 0, "ok": [],
                "ok_known": [], "fail_known": [], "unexpected": [entry], "skipped": [],
                "errors": []}

    monkeypatch.setattr(intercode.validate, "validate", validate)
    with pytest.raises(AssertionError, match=r"(?s)gold validation failed.*scores 0\.5"):
        testing.check_golds("python")


def test_check_sandbox_passes_on_bwrap():
    from intercode.sandbox import create_sandbox

    testing.check_sandbox(partial(create_sandbox, "bwrap"))


def test_check_sandbox_fails_on_a_sandbox_whose_reset_keeps_changes():
    from intercode.sandbox import create_sandbox

    def factory(**kwargs: Any):
        box = create_sandbox("bwrap", **kwargs)
        box.reset = lambda: box.run("cd /")  # type: ignore[method-assign]
        return box

    with pytest.raises(AssertionError, match="reset did not restore"):
        testing.check_sandbox(factory)


def test_toy_is_not_left_registered():
    assert "toy" not in names()
