"""Benchmarks as plugins: the registry, entry points, and user task files on the CLI.

A plugin is installed here for real: a package and its ``*.dist-info`` with an
``intercode.benchmarks`` entry point on ``PYTHONPATH``, so that the command line and
its spawned workers find it the way ``pip install`` would make them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import intercode
from intercode.agents import prompts
from intercode.agents.parsing import parse_code, parse_react
from intercode.benchmarks import Benchmark, Parsing, Prompting, get, names, register, unregister
from intercode.cli import main
from intercode.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "datasets"

PLUGIN = '''
import dataclasses

from intercode.benchmarks import Benchmark, Parsing, Prompting
from intercode.envs.bash import BashEnv


class ShoutEnv(BashEnv):
    """Bash, under another name: a third-party environment."""

    env_name = "shout"


def load(name):
    from intercode.datasets import load_dataset

    demo = load_dataset("bash-demo")
    tasks = tuple(dataclasses.replace(t, dataset=name) for t in demo)
    return dataclasses.replace(demo, name=name, env="shout", tasks=tasks)


BENCHMARK = Benchmark(
    name="shout", env=ShoutEnv, datasets={"shout-demo": load}, default_dataset="shout-demo",
    parsing=Parsing(tags=frozenset({"shout"})),
    prompting=Prompting(language="shout", setting="Loud Shell"),
    human_prompt="!!", dialogue_limit=3)


def broken():
    raise RuntimeError("this plugin is broken")


from intercode.sandbox.bwrap import BwrapSandbox


class LoudBox(BwrapSandbox):
    """A sandbox backend from a plugin."""

    name = "loud"
'''


def install_plugin(site: Path, entry_points: str) -> dict[str, str]:
    """A package and its dist-info under ``site``; the environment that finds them."""
    (site / "shoutplug").mkdir(parents=True)
    (site / "shoutplug" / "__init__.py").write_text(PLUGIN)
    info = site / "shoutplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shoutplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run(env: dict[str, str], *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "intercode", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture()
def plugin_env(tmp_path):
    return install_plugin(tmp_path / "site", """
        [intercode.benchmarks]
        shout = shoutplug:BENCHMARK
        broken = shoutplug:broken

        [intercode.sandboxes]
        loud = shoutplug:LoudBox
        missing = shoutplug:NoSuchBox
        """)


def test_a_plugin_runs_on_the_command_line_with_workers(plugin_env, tmp_path):
    out = tmp_path / "run"
    done = run(plugin_env, "eval", "shout", "--agent", "gold", "--workers", "2",
               "--output", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "this plugin is broken" in done.stderr  # a warning; the others still load
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 8 and all(r["status"] == "ok" and r["success"] for r in records)
    listed = run(plugin_env, "datasets", "shout")
    assert listed.stdout.split() == ["shout-demo", "shout"]


def test_a_plugin_is_a_gymnasium_environment_and_gets_the_strategies(plugin_env):
    code = textwrap.dedent("""
        import gymnasium as gym, intercode
        from intercode.agents import prompts
        from intercode.agents.parsing import parse_code
        env = gym.make("intercode/shout-v0")
        obs, info = env.reset(options={"task": 0})
        env.step(env.unwrapped.task.gold)
        print(env.step("submit")[1])
        env.close()
        print("Loud Shell" in prompts.try_again_system("shout"))
        print(parse_code("```shout\\necho hi\\n```", "shout").text)
        """)
    done = run(plugin_env, code=code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["1.0", "True", "echo hi"]


def test_a_plugin_module_imported_before_intercode_still_registers(plugin_env):
    # the plugin imports intercode at its top; importing intercode must not load the
    # plugins (the half-imported plugin module had no BENCHMARK yet and was dropped)
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("error")
        import shoutplug
        import intercode
        env = intercode.make("shout")
        print(env.unwrapped.dataset.name)
        env.close()
        """)
    done = run(plugin_env, code=code)
    assert "this plugin is broken" in done.stderr  # the broken one warns, on first lookup
    plugin_env = install_plugin_entry(plugin_env, "shout = shoutplug:BENCHMARK")
    done = run(plugin_env, code=code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["shout-demo"]


def install_plugin_entry(env: dict[str, str], line: str) -> dict[str, str]:
    """The same package with only ``line`` in its benchmark entry points."""
    site = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    (site / "shoutplug-1.0.dist-info" / "entry_points.txt").write_text(
        f"[intercode.benchmarks]\n{line}\n")
    return env


def test_a_sandbox_backend_from_a_plugin(plugin_env):
    code = textwrap.dedent("""
        from intercode.sandbox import create_sandbox
        from intercode.sandbox.filetree import FileTree
        from intercode.errors import ConfigError
        with create_sandbox("loud") as box:
            box.load(FileTree.of([]))
            print(type(box).__name__, box.run("echo hi").output.strip())
        try:
            create_sandbox("missing")
        except ConfigError as exc:
            print("refused:", "cannot be loaded" in str(exc))
        """)
    done = run(plugin_env, code=code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["LoudBox hi", "refused: True"]


def test_the_command_line_runs_on_a_plugins_sandbox_backend(plugin_env, tmp_path):
    out = tmp_path / "run"
    done = run(plugin_env, "eval", "bash", "--dataset", "bash-demo", "--agent", "gold",
               "--sandbox", "loud", "--output", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "ok" and r["success"] for r in records)
    bad = run(plugin_env, "eval", "bash", "--sandbox", "nope", "--agent", "gold")
    last = bad.stderr.strip().splitlines()[-1]  # (the fixture's broken plugin warns first)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert "unknown sandbox backend 'nope'" in last and "loud" in last, last


@pytest.fixture()
def shout():
    """The plugin's benchmark registered in this process (and removed after)."""
    namespace: dict[str, object] = {}
    exec(compile(PLUGIN, "shoutplug", "exec"), namespace)
    benchmark = namespace["BENCHMARK"]
    assert isinstance(benchmark, Benchmark)
    register(benchmark)
    yield benchmark
    unregister("shout")


def test_an_in_process_benchmark_reaches_every_part(shout):
    assert "shout" in names()
    env = intercode.make("shout", max_turns=3)
    try:
        env.reset(options={"task": 1})
        assert env.step("echo loud")[0] == "loud\n"
    finally:
        env.close()
    assert "Loud Shell" in prompts.react_system("shout")
    assert prompts.try_again_observation("shout", "q", "", 0.5).startswith("Loud Shell Output")
    assert parse_react("Thought: x\nAction: execute[ls]", "shout")[1].text == "ls"
    assert parse_code("submit now", "shout").kind == "code"  # no submit argument here


def test_a_name_or_dataset_taken_is_refused(shout):
    with pytest.raises(ConfigError, match="already registered"):
        register(Benchmark(name="shout", env=shout.env, datasets={"x-1": str},
                           default_dataset="x-1", parsing=Parsing(),
                           prompting=Prompting("a", "b")))
    with pytest.raises(ConfigError, match="already belongs to bash"):
        register(Benchmark(name="other", env=shout.env, datasets={"bash-demo": str},
                           default_dataset="bash-demo", parsing=Parsing(),
                           prompting=Prompting("a", "b")))


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "has space"}, "letters, digits"),
    ({"default_dataset": "nope"}, "not one of its datasets"),
    ({"options": frozenset({"gpu"})}, "unknown options"),
    ({"echo": "echo hi"}, "must contain"),
    ({"play_dataset": "nope"}, "not one of its datasets"),
])
def test_a_malformed_spec_is_one_line(kwargs, message):
    base = {"name": "ok", "env": "x:Y", "datasets": {"d": str}, "default_dataset": "d",
            "parsing": Parsing(), "prompting": Prompting("a", "b")}
    with pytest.raises(ConfigError, match=message):
        Benchmark(**{**base, **kwargs})


def test_unknown_environments_and_bad_imports_are_one_line(capsys):
    assert main(["datasets", "nope"]) == 2
    assert "unknown environment 'nope'" in capsys.readouterr().err
    broken = Benchmark(name="ghost", env="no.such.module:Env", datasets={"ghost-1": str},
                       default_dataset="ghost-1", parsing=Parsing(),
                       prompting=Prompting("a", "b"))
    register(broken)
    try:
        with pytest.raises(ConfigError, match=r"cannot load 'no\.such\.module:Env'"):
            broken.env_class()
    finally:
        unregister("ghost")
    assert get("bash").env_class().__name__ == "BashEnv"


def test_options_are_refused_where_the_benchmark_takes_none(capsys):
    assert main(["eval", "bash", "--backend", "mysql"]) == 2
    assert "--backend applies only to the sql environment, not bash" in capsys.readouterr().err
    assert main(["eval", "python", "--network"]) == 2
    assert "--network applies only to the ctf environment" in capsys.readouterr().err


# -- user task files on the command line and in Python ----------------------------------


@pytest.mark.parametrize("env", ["bash", "python", "sql", "ctf"])
def test_a_task_file_runs_with_eval(env, tmp_path, capsys):
    path = EXAMPLES / env / "tasks.jsonl"
    out = tmp_path / "run"
    code = main(["eval", env, "--dataset", str(path), "--agent", "gold", "--workers", "2",
                 "--output", str(out), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "ok" and r["success"] for r in records)
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"] == str(path) and len(config["dataset_revision"]) == 64


def test_a_task_file_validates_and_opens_in_python(capsys):
    path = str(EXAMPLES / "python" / "tasks.jsonl")
    assert main(["validate", "python", "--dataset", path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unexpected"] == [] and report["scored_one"] == report["tasks"] > 0
    env = intercode.make("python", dataset=path)
    try:
        obs, _ = env.reset(options={"task": 0})
        assert obs == env.unwrapped.dataset[0].query
    finally:
        env.close()


def test_a_bad_task_file_is_one_line_before_anything_runs(tmp_path, capsys):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"query": "q", "gold": "ls"}\n{"query": 3, "gold": "ls"}\n')
    assert main(["eval", "bash", "--dataset", str(bad), "--output", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("intercode: error: ") and "tasks.jsonl:2" in err and "query" in err
    assert "\n" not in err and not (tmp_path / "r").exists()
    assert main(["eval", "bash", "--dataset", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err


def test_settings_reach_the_environments_that_take_them(capsys):
    from intercode.envs.factory import make_env
    from intercode.envs.settings import EnvSettings

    sql = make_env("sql", "spider-dev", EnvSettings(sql_max_rows=7, sql_max_result_rows=70))
    python = make_env("python", "mbpp-prompt", EnvSettings(test_timeout=0.5))
    try:
        assert (sql.limits.max_rows, sql.limits.max_result_rows) == (7, 70)
        assert python.test_timeout == 0.5
    finally:
        sql.close()
        python.close()
    for argv, flag in ((["eval", "bash", "--test-timeout", "2"], "--test-timeout"),
                       (["eval", "python", "--sql-max-rows", "5"], "--sql-max-rows")):
        assert main(argv) == 2
        assert f"{flag} applies only to the" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="test_timeout"):
        make_env("python", "mbpp-prompt", EnvSettings(test_timeout=-1))
