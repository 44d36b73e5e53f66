"""Contract checks a benchmark or sandbox author runs in their own test suite.

Each check raises :class:`AssertionError` with a message naming what broke::

    from intercode.testing import check_benchmark, check_golds

    def test_my_benchmark():
        check_benchmark("mine")          # the Gymnasium and intercode contract
        check_golds("mine")              # every gold solution scores 1.0

:func:`check_benchmark` runs the finer checks below on one environment of the
benchmark's test dataset (``Benchmark.test_dataset``, else its default one), using
``Benchmark.echo`` as an action that prints and succeeds. :func:`check_sandbox` is the
essential contract of a sandbox backend (``tests/contract/test_sandbox_contract.py`` has
the full one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym

from intercode.benchmarks import get
from intercode.benchmarks.spec import Benchmark
from intercode.envs.base import IntercodeEnv
from intercode.errors import ConfigError, EnvStateError

__all__ = ["check_benchmark", "check_golds", "check_sandbox", "small_dataset"]

TEXT = "rendered"
BAD_TASKS = (-1, 10_000, "0", 1.5, True)



def _ic(env: gym.Env[Any, Any]) -> IntercodeEnv:
    """The intercode environment under Gymnasium's wrappers."""
    return cast(IntercodeEnv, env.unwrapped)

def _check(condition: object, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _raises(error: type[BaseException], call: Callable[[], Any], message: str) -> None:
    try:
        call()
    except error:
        return
    except Exception as exc:
        raise AssertionError(f"{message}: raised {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{message}: nothing was raised")


def small_dataset(name: str) -> str:
    """The dataset the checks use: the benchmark's test dataset, else its default one."""
    benchmark = get(name)
    return benchmark.test_dataset or benchmark.default_dataset


def echo(name: str, text: str = TEXT) -> str:
    """The benchmark's action that prints ``text``."""
    return get(name).echo.replace("{text}", text)


def check_spec(name: str) -> Benchmark:
    """The spec is sane: its class, its datasets, a non-empty test dataset."""
    from intercode.datasets import load_dataset
    from intercode.envs.base import IntercodeEnv
    from intercode.errors import DataUnavailable

    benchmark = get(name)
    cls = benchmark.env_class()
    _check(isinstance(cls, type) and issubclass(cls, IntercodeEnv),
           f"{name}: env {benchmark.env!r} is not an IntercodeEnv subclass")
    _check(cls.env_name == name, f"{name}: {cls.__name__}.env_name is {cls.env_name!r}")
    if benchmark.core is not None:  # what a run's workers build instead: the same workings
        core = benchmark.core_class()
        _check(isinstance(core, type) and issubclass(cls, core),
               f"{name}: env {cls.__name__} is not a subclass of its core {benchmark.core!r}")
    for dataset in benchmark.datasets:
        if dataset != small_dataset(name):
            try:
                ds = load_dataset(dataset)
            except DataUnavailable:
                continue  # not on this machine (a large file no mirror here has)
        else:
            ds = load_dataset(dataset)
        _check(ds.env == name, f"{name}: dataset {dataset} says it is for {ds.env!r}")
        _check(ds.name == dataset, f"{name}: dataset {dataset} calls itself {ds.name!r}")
        _check(all(t.index == i for i, t in enumerate(ds)),
               f"{name}: the tasks of {dataset} are not numbered 0, 1, ...")
    _check(len(load_dataset(small_dataset(name))) > 0, f"{name}: the test dataset is empty")
    return benchmark


def check_gymnasium(env: gym.Env[Any, Any]) -> None:
    """Gymnasium's own ``check_env`` passes on the unwrapped environment."""
    from gymnasium.utils.env_checker import check_env

    check_env(env.unwrapped, skip_render_check=True)


def check_make(name: str) -> None:
    """``intercode.make(name)`` is ``gymnasium.make("intercode/<name>-v0")``."""
    import intercode

    env = intercode.make(name, dataset=small_dataset(name))
    try:
        _check(env.spec is not None and env.spec.id == get(name).gym_id,
               f"{name}: intercode.make gave {env.spec and env.spec.id!r}")
    finally:
        env.close()


def check_reset(env: gym.Env[Any, Any]) -> None:
    """Reset on a task (option ``task``) returns its query and names it in ``info``."""
    ds = _ic(env).dataset
    for index in sorted({0, len(ds) - 1}):
        obs, info = env.reset(options={"task": index})
        _check(obs == ds[index].query, f"reset on task {index} did not return its query")
        _check(info.get("task") == index and info.get("dataset") == ds.name,
               f"reset on task {index}: info names task {info.get('task')!r} of "
               f"{info.get('dataset')!r}")


def check_seeding(env: gym.Env[Any, Any]) -> None:
    """Seeded resets pick the same tasks again (and not always the same one)."""
    first = [env.reset(seed=s)[1]["task"] for s in range(8)]
    again = [env.reset(seed=s)[1]["task"] for s in range(8)]
    _check(first == again, f"seeded resets are not reproducible: {first} then {again}")
    if len(_ic(env).available_tasks()) > 1:
        _check(len(set(first)) > 1, f"eight seeds all picked task {first[0]}")


def check_invalid_tasks(env: gym.Env[Any, Any]) -> None:
    """A task option that is not a valid index is a ConfigError."""
    for bad in BAD_TASKS:
        def reset(bad: object = bad) -> object:
            return env.reset(options={"task": bad})

        _raises(ConfigError, reset,
                f"reset(options={{'task': {bad!r}}}) must raise ConfigError")


def check_step_errors(name: str) -> None:
    """A step before reset or after the end is an EnvStateError; a non-string a TypeError."""
    raw = get(name).env_class()(small_dataset(name))
    try:
        _raises(EnvStateError, lambda: raw.step(echo(name)), f"{name}: step before reset")
        raw.reset(options={"task": 0})
        _raises(TypeError, lambda: raw.step(42), f"{name}: a non-string action")  # type: ignore[arg-type]
        raw.step("skip")
        _raises(EnvStateError, lambda: raw.step(echo(name)), f"{name}: step after the end")
    finally:
        raw.close()


def check_skip(env: gym.Env[Any, Any]) -> None:
    """``skip`` ends the episode with reward 0."""
    env.reset(options={"task": 0})
    _, reward, terminated, truncated, info = env.step("skip")
    _check((reward, terminated, truncated) == (0.0, True, False) and info.get("skipped"),
           f"skip gave reward {reward}, terminated {terminated}, truncated {truncated}, "
           f"info {info}")


def check_echo(env: gym.Env[Any, Any]) -> None:
    """The benchmark's ``echo`` action prints its text and succeeds (exit code 0)."""
    name = _ic(env).env_name
    env.reset(options={"task": 0})
    action = echo(name)
    obs, reward, terminated, truncated, info = env.step(action)
    _check(TEXT in obs, f"{name}: {action!r} printed {obs!r}")
    _check(reward == 0.0 and not terminated and not truncated,
           f"{name}: an action gave reward {reward}, terminated {terminated}")
    _check(info.get("turn") == 1 and info.get("exit_code") == 0
           and info.get("timed_out") is False,
           f"{name}: {action!r} gave info {info} (want turn 1, exit_code 0, timed_out False)")


def check_submit(env: gym.Env[Any, Any]) -> None:
    """After the gold, ``submit`` ends with a reward in [0, 1] equal to ``evaluate()``'s;
    evaluating does not end the episode (a benchmark whose gold is itself a submission,
    like CTF's flag, is checked on that submission)."""
    raw = _ic(env)
    benchmark = get(raw.env_name)
    env.reset(options={"task": 0})
    assert raw.task is not None
    action = benchmark.gold_action(raw.task)
    if raw.parse_submit(action.strip())[0]:
        preview = raw.evaluate()
        _check(not raw.done, "evaluate() ended the episode")
        _check(0.0 <= preview.reward <= 1.0, f"evaluate() gave reward {preview.reward}")
        _, reward, terminated, truncated, info = env.step(action)
        _check(terminated and not truncated, f"the gold submission {action!r} did not end "
               f"the episode (terminated {terminated}, truncated {truncated})")
    else:
        env.step(action)
        preview = raw.evaluate()
        _check(not raw.done, "evaluate() ended the episode")
        _, reward, terminated, truncated, info = env.step(raw.submit_keyword)
        _check(terminated and not truncated,
               f"submit did not end the episode (terminated {terminated}, truncated {truncated})")
        _check(reward == preview.reward and info.get("success") == preview.success,
               f"submit gave {reward} (success {info.get('success')}), evaluate() "
               f"{preview.reward} (success {preview.success})")
    _check(0.0 <= float(reward) <= 1.0, f"submit gave reward {reward}, not in [0, 1]")
    _check("reward_parts" in info, f"the info of a submission has no reward_parts: {info}")


def check_turn_limit(name: str) -> None:
    """``intercode.make(name, max_turns=2)`` truncates at the second action."""
    import intercode

    env = intercode.make(name, dataset=small_dataset(name), max_turns=2)
    try:
        env.reset(options={"task": 0})
        _check(env.step(echo(name, "1"))[3] is False, f"{name}: truncated after one turn")
        _, _, terminated, truncated, _ = env.step(echo(name, "2"))
        _check(truncated and not terminated,
               f"{name}: turn 2 of 2 gave terminated {terminated}, truncated {truncated}")
    finally:
        env.close()


def check_render(name: str) -> None:
    """``render_mode="ansi"`` renders the episode: the action and its output."""
    env = gym.make(get(name).gym_id, dataset=small_dataset(name), render_mode="ansi")
    try:
        available = _ic(env).available_tasks()
        env.reset(options={"task": available[1] if len(available) > 1 else available[0]})
        env.step(echo(name))
        text = env.render()
        _check(isinstance(text, str) and f"$ {echo(name)}" in text
               and text.count(TEXT) == 2, f"{name}: render gave {text!r}")
    finally:
        env.close()


def check_benchmark(name: str) -> None:
    """Every contract check on the benchmark ``name`` (on its test dataset)."""
    check_spec(name)
    check_make(name)
    env = gym.make(get(name).gym_id, dataset=small_dataset(name))
    try:
        for check in (check_gymnasium, check_reset, check_seeding, check_invalid_tasks,
                      check_skip, check_echo, check_submit):
            try:
                check(env)
            except AssertionError as exc:
                raise AssertionError(f"{name}: {check.__name__}: {exc}") from exc
    finally:
        env.close()
    check_step_errors(name)
    check_turn_limit(name)
    check_render(name)


def check_golds(name: str, dataset: str | None = None,
                tasks: tuple[int, ...] | None = None, workers: int = 1) -> dict[str, Any]:
    """Every gold of ``dataset`` (default: the test dataset) scores 1.0 or is a known issue."""
    from intercode.validate import format_report, validate

    report = validate(name, dataset or small_dataset(name), workers=workers, tasks=tasks,
                      progress=False)
    _check(report["tasks"] > 0, f"{name}: no task ran")
    _check(not report["unexpected"] and not report["errors"],
           f"{name}: gold validation failed:\n{format_report(report)}")
    return report


def check_sandbox(factory: Callable[..., Any]) -> None:
    """The essential contract of a sandbox backend: ``factory(limits=...)`` builds an
    unstarted sandbox (``create_sandbox``'s signature); it must start, load a tree, keep the
    shell's state, report exit codes and output, survive a timeout, and reset the tree."""
    from intercode.sandbox.filetree import DIR, FILE, Entry, FileTree
    from intercode.sandbox.limits import Limits

    mtime = 1_600_000_000 * 10**9
    tree = FileTree.of([Entry("work", DIR, 0o755, mtime),
                        Entry("work/a.txt", FILE, 0o644, mtime, b"alpha\n"),
                        Entry("work/run.sh", FILE, 0o755, mtime, b"#!/bin/sh\necho run\n")])
    box = factory(limits=Limits(timeout=2, kill_grace=0.5))
    box.start()
    try:
        box.load(tree)
        _check(box.alive, "the sandbox is not alive after start and load")
        r = box.run("cat /work/a.txt; /work/run.sh")
        _check(r.output == "alpha\nrun\n" and r.exit_code == 0,
               f"the loaded tree: got {r.output!r}, exit code {r.exit_code}")
        box.run("cd /work && export GREETING=hi && count=3")
        box.run("greet() { echo \"$GREETING $1 $count\"; }")
        r = box.run("pwd; greet you")
        _check(r.output == "/work\nhi you 3\n" and r.cwd == "/work",
               f"the shell's state did not persist: {r.output!r} in {r.cwd!r}")
        r = box.run("echo one; echo two >&2; echo three; false")
        _check(r.output == "one\ntwo\nthree\n" and r.exit_code == 1,
               f"output and exit code: {r.output!r}, {r.exit_code}")
        r = box.run("sleep 30")
        _check(r.timed_out and "timed out" in r.observation,
               f"a 30 s action in a 2 s limit: timed_out {r.timed_out}, {r.observation!r}")
        r = box.run("echo after")
        _check(r.output.endswith("after\n"), f"after a timeout the episode goes on: {r.output!r}")
        box.run("cd /work; rm a.txt; echo x > new.txt; chmod -x run.sh; V=1")
        changed = {c.path for c in box.diff()}
        _check({"work/a.txt", "work/new.txt"} <= {p.lstrip("/") for p in changed},
               f"diff does not show the removed and the new file: {sorted(changed)}")
        box.reset()
        r = box.run("pwd; echo \"V=$V\"; ls -A /work; cat /work/a.txt; "
                    "test -x /work/run.sh && echo exec")
        _check(r.output == "/\nV=\na.txt\nrun.sh\nalpha\nexec\n",
               f"reset did not restore the tree and the shell: {r.output!r}")
        _check(box.diff() == [], f"diff after reset: {box.diff()}")
    finally:
        box.close()
    _check(not box.alive, "the sandbox is alive after close")
