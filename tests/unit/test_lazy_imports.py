"""The command line and ``import intercode`` load only what they use.

Structural, not timed: each check runs in a fresh interpreter and reads ``sys.modules``.
The public API stays whole (each name imported on first use) and ``import intercode``
still registers the Gymnasium ids, whichever of the two is imported first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import intercode
from intercode.agents.llm import POLICIES
from intercode.agents.names import AGENTS, STRATEGIES

SRC = str(Path(intercode.__file__).resolve().parents[1])
# what `intercode --help` must not load: Gymnasium and numpy (the environments), rich (the
# console views), openai (the LLM client)
HEAVY = ("gymnasium", "numpy", "rich", "openai")
SUBCOMMANDS = [[], ["eval"], ["validate"], ["play"], ["report"], ["compare"], ["show"],
               ["serve"], ["serve", "mcp"], ["serve", "openenv"], ["export"], ["doctor"],
               ["datasets"]]


def fresh(code: str) -> str:
    """stdout of ``code`` in a new interpreter importing this checkout's intercode."""
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": SRC if not path else f"{SRC}{os.pathsep}{path}"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


LOADED = """
import contextlib, io, json, sys
from intercode.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main({argv!r})
    except SystemExit as exc:
        code = exc.code
print(json.dumps([code, sorted({{m.split(".")[0] for m in sys.modules}})]))
"""


@pytest.mark.parametrize("sub", SUBCOMMANDS, ids=lambda s: " ".join(s) or "intercode")
def test_help_loads_no_heavy_module(sub):
    code, loaded = json.loads(fresh(LOADED.format(argv=[*sub, "--help"])))
    assert code == 0
    assert not set(HEAVY) & set(loaded), f"`intercode {' '.join(sub)} --help` imported " \
                                         f"{sorted(set(HEAVY) & set(loaded))}"


def test_listing_datasets_loads_no_heavy_module():
    code, loaded = json.loads(fresh(LOADED.format(argv=["datasets"])))
    assert code == 0
    assert not set(HEAVY) & set(loaded)


def test_import_intercode_loads_no_heavy_module():
    loaded = json.loads(fresh("import sys, json, intercode, intercode.cli; "
                              "print(json.dumps(sorted(sys.modules)))"))
    assert not {m.split(".")[0] for m in loaded} & set(HEAVY)


def test_public_api_resolves_lazily():
    for name in intercode.__all__:
        assert getattr(intercode, name) is not None, name
    assert set(intercode.__all__) <= set(dir(intercode))
    with pytest.raises(AttributeError):
        intercode.NoSuchThing  # noqa: B018
    from intercode.envs import BashEnv
    from intercode.envs.bash import BashEnv as Direct

    assert intercode.BashEnv is BashEnv is Direct


@pytest.mark.parametrize("code", [
    # intercode first, Gymnasium after: registered when Gymnasium's import finishes
    "import intercode; import gymnasium as gym",
    # Gymnasium first: registered by `import intercode`
    "import gymnasium as gym; import intercode",
    # the command line's registry (a parser built) before Gymnasium
    "import intercode.cli as c; c.build_parser(); import gymnasium as gym",
    # an environment class imported first (it imports Gymnasium itself)
    "from intercode import BashEnv; import gymnasium as gym",
    # Gymnasium's own "module:id" form, nothing of ours imported before
    "import gymnasium as gym; gym.make('intercode:intercode/bash-v0', dataset='bash-demo')"
    ".close()",
])
def test_gymnasium_ids_registered_whatever_the_import_order(code):
    ids = json.loads(fresh(code + "; import json; print(json.dumps(sorted("
                                  "k for k in gym.registry if k.startswith('intercode/'))))"))
    assert {"intercode/bash-v0", "intercode/sql-v0", "intercode/python-v0",
            "intercode/ctf-v0"} <= set(ids)


def test_gym_make_in_a_fresh_process():
    out = fresh("import intercode; import gymnasium as gym\n"
                "env = gym.make('intercode/bash-v0', dataset='bash-demo')\n"
                "print(type(env.unwrapped).__name__); env.close()\n"
                "env = intercode.make('bash', dataset='bash-demo', max_turns=2)\n"
                "print(env.spec.max_episode_steps); env.close()")
    assert out.split() == ["BashEnv", "2"]


def test_without_import_intercode_the_ids_are_unknown_as_before():
    # Gymnasium 1.x has no plugin entry points: `import intercode` (or "intercode:id")
    # is what registers the ids, as documented
    out = fresh("import gymnasium as gym; print('intercode/bash-v0' in gym.registry)")
    assert out.strip() == "False"


def test_agent_names_match_the_policies():
    assert tuple(POLICIES) == STRATEGIES
    assert AGENTS[:4] == ("gold", "noop", "replay", "human")


def test_top_level_help_scans_no_plugins():
    """`intercode --help` lists sub-commands only: it neither imports importlib.metadata
    (tens of ms) nor scans the plugin entry points; `eval --help` still names every
    environment, plugins included."""
    full_names = LOADED.replace('m.split(".")[0]', "m")
    code, loaded = json.loads(fresh(full_names.format(argv=["--help"])))
    assert code == 0
    assert "importlib.metadata" not in loaded
    shown = fresh("import contextlib, io\nfrom intercode.cli import main\n"
                  "buf = io.StringIO()\n"
                  "with contextlib.redirect_stdout(buf):\n"
                  "    try:\n        main(['eval', '--help'])\n"
                  "    except SystemExit:\n        pass\n"
                  "print(buf.getvalue())")
    assert "bash, sql, python, ctf" in " ".join(shown.split())


def test_an_evaluation_run_main_process_loads_no_environment(tmp_path):
    """The run's main process only hands task indices to its workers and writes their
    records: Gymnasium and numpy (about 0.4 s) load in the workers only, so the workers
    are started that much sooner."""
    code, loaded = json.loads(fresh(LOADED.format(argv=[
        "eval", "bash", "--dataset", "bash-demo", "--agent", "gold", "--tasks", "0",
        "--workers", "1", "--output", str(tmp_path / "run"), "--no-progress"])))
    assert code == 0
    records = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert json.loads(records[0])["status"] == "ok"
    assert not {"gymnasium", "numpy"} & set(loaded), loaded


@pytest.mark.parametrize("env", ["bash", "sql", "python", "ctf", "swe"])
def test_a_runs_workers_import_neither_gymnasium_nor_numpy(env: str) -> None:
    """What a built-in benchmark's fork server imports for its workers (the modules every
    worker needs and the environment's core), and the class the workers build."""
    out = fresh(f"""
import importlib, json, sys
from intercode.runner import workerserver
for name in [*workerserver.PRELOAD, workerserver.BUILTIN_ENV_MODULES[{env!r}]]:
    importlib.import_module(name)
from intercode.benchmarks import get
core = get({env!r}).core_class()
print(json.dumps([core.__module__, [m for m in {list(HEAVY)!r} if m in sys.modules]]))
""")
    module, loaded = json.loads(out)
    assert module == f"intercode.envs.core.{env}"
    assert loaded == []


def test_the_public_environments_are_their_cores_as_gymnasium_envs() -> None:
    import gymnasium as gym

    from intercode.benchmarks import builtin
    from intercode.envs.core.base import EnvCore

    for benchmark in builtin.BENCHMARKS:
        cls, core = benchmark.env_class(), benchmark.core_class()
        assert issubclass(cls, core) and issubclass(cls, gym.Env)
        assert issubclass(core, EnvCore) and not issubclass(core, gym.Env)
        assert cls.__init__ is core.__init__  # the same arguments, the same checks
        # nothing of the public class's own that a run's worker (the core) would lack
        assert set(vars(cls)) <= {"__module__", "__doc__", "__qualname__", "__parameters__",
                                  "__orig_bases__", "__abstractmethods__", "_abc_impl"}


@pytest.mark.parametrize("env", ["bash", "sql", "python", "ctf", "swe"])
def test_a_runs_worker_builds_the_core(env: str) -> None:
    """What a worker builds (``runner.worker.make_env``), in a fresh interpreter: the
    benchmark's core, with neither Gymnasium nor numpy loaded."""
    out = fresh(f"""
import json, sys
from intercode.benchmarks import get
from intercode.runner.worker import WorkerSpec, make_env
env = make_env(WorkerSpec(env={env!r}, dataset=get({env!r}).default_dataset, agent="gold"))
try:
    print(json.dumps([type(env).__name__, [m for m in {list(HEAVY)!r} if m in sys.modules]]))
finally:
    env.close()
""")
    name, loaded = json.loads(out)
    assert name == f"{env.capitalize()}Core" and loaded == []


def test_a_plugins_worker_gets_numpy_on_one_thread_whichever_server_forked_it() -> None:
    """A worker whose environment has no core (a plugin's gymnasium.Env) imports numpy
    with its math library on one thread even when its fork server did not (one started
    for a built-in benchmark by an earlier run of the same process); a built-in
    benchmark's worker imports no numpy."""
    pytest.importorskip("intercode_node", reason="the example plugin is not installed")
    pytest.importorskip("threadpoolctl")
    code = """
import json, sys
from threadpoolctl import threadpool_info
from intercode.runner.worker import WorkerSpec, _one_math_thread
_one_math_thread(WorkerSpec(env={env!r}, dataset="unused", agent="gold"))
blas = sorted({{i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}})
print(json.dumps(["numpy" in sys.modules, blas]))
"""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    for name, expected in (("bash", [False, []]), ("node", [True, [1]])):
        proc = subprocess.run([sys.executable, "-c", code.format(env=name)], env={
            **env, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, env.get("PYTHONPATH")]))},
            capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == expected
