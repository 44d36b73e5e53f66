"""What ships an environment to another process (Gymnasium's async vector env, Ray): its
spec and constructor arguments pickle; a live environment refuses, saying so."""

from __future__ import annotations

import copy
import inspect
import json
import pickle
import subprocess
import sys
from functools import partial

import cloudpickle
import gymnasium as gym
import pytest

import intercode  # noqa: F401  (registers the ids)
from intercode import testing
from intercode.benchmarks import benchmarks, get
from intercode.datasets import load_dataset
from intercode.envs.registration import env_id
from intercode.sandbox import create_sandbox
from intercode.sandbox.layout import Layout
from intercode.sandbox.limits import Limits
from intercode.sql.backend import SqlLimits

NAMES = sorted(b.name for b in benchmarks())
PICKLERS = {"pickle": pickle, "cloudpickle": cloudpickle}
# every constructor argument of the built-in environments, none at its default
KWARGS = {
    "bash": {"limits": Limits(timeout=5.0), "layout": Layout(hostname="box"),
             "sandbox": partial(create_sandbox, "bwrap", layout=Layout(hostname="box")),
             "backend": "bwrap", "upstream_quirks": True, "gold_cache": False,
             "answer_check": "strict", "render_mode": "ansi"},
    "sql": {"backend": "sqlite", "mysql_url": "mysql://u:p@127.0.0.1:3306",
            "limits": SqlLimits(timeout=5.0), "sandbox_backend": "bwrap",
            "metric": "exec_match_nodistinct", "render_mode": "ansi"},
    "python": {"limits": Limits(timeout=5.0), "layout": Layout(hostname="box"),
               "test_timeout": 2.0, "backend": "bwrap", "upstream_quirks": True,
               "gold_cache": False, "render_mode": "ansi"},
    "ctf": {"limits": Limits(timeout=5.0), "layout": Layout(hostname="box"), "network": "host",
            "max_submissions": 3, "backend": "bwrap", "upstream_quirks": True,
            "render_mode": "ansi"},
    "swe": {"limits": Limits(timeout=5.0), "layout": Layout(hostname="box"), "backend": "bwrap",
            "repo_mirror": "/srv/mirrors", "test_timeout": 60.0,
            "image": "swebench/sweb.eval.x86_64.{instance_id}", "render_mode": "ansi"},
}
LIVE = r"a live \w+Env holds sandboxes .* cannot be pickled or copied; pass its spec"


def kwargs_of(name: str) -> dict[str, object]:
    return {"dataset": testing.small_dataset(name), **KWARGS.get(name, {})}


def same(a: object, b: object) -> bool:
    """Equal, with a ``partial`` compared by what it calls."""
    if isinstance(a, partial) and isinstance(b, partial):
        return (a.func, a.args, a.keywords) == (b.func, b.args, b.keywords)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("name", sorted(KWARGS))
def test_the_table_names_every_constructor_argument(name):
    params = inspect.signature(get(name).env_class().__init__).parameters
    assert set(params) - {"self", "dataset"} == set(KWARGS[name])


@pytest.mark.parametrize("pickler", sorted(PICKLERS))
@pytest.mark.parametrize("name", NAMES)
def test_make_kwargs_and_specs_round_trip(name, pickler):
    dumps, loads = PICKLERS[pickler].dumps, pickle.loads
    kwargs = kwargs_of(name)
    assert same(loads(dumps(kwargs)), kwargs)
    with_dataset = {**kwargs, "dataset": load_dataset(testing.small_dataset(name))}
    assert same(loads(dumps(with_dataset)), with_dataset)
    spec = gym.spec(env_id(name))
    assert loads(dumps(spec)) == spec
    made = copy.deepcopy(spec)
    made.kwargs = kwargs
    assert same(loads(dumps(made)).kwargs, kwargs) and loads(dumps(made)).id == spec.id


@pytest.mark.parametrize("name", NAMES)
def test_a_live_env_does_not_pickle_and_says_what_to_ship(name):
    env = gym.make(env_id(name), dataset=testing.small_dataset(name))
    try:
        for attempt in (pickle.dumps, cloudpickle.dumps, copy.deepcopy, copy.copy):
            with pytest.raises(TypeError, match=LIVE):
                attempt(env.unwrapped)
        with pytest.raises(TypeError, match=LIVE):
            pickle.dumps(env)  # through Gymnasium's wrappers
        assert pickle.loads(pickle.dumps(env.spec)) == env.spec
    finally:
        env.close()


def test_the_bash_env_default_sandbox_factory_pickles():
    env = gym.make(env_id("bash"), dataset="bash-demo")
    try:
        factory = pickle.loads(pickle.dumps(env.unwrapped._factory))
        assert factory.func is create_sandbox
    finally:
        env.close()


CHILD = r"""
import json, pickle, sys
import gymnasium as gym

specs = pickle.load(sys.stdin.buffer)  # imports nothing of intercode but what it names
from intercode.benchmarks import get

rewards = {}
for spec in specs:
    env = gym.make(spec)
    try:
        ic = env.unwrapped
        task = ic.dataset[ic.available_tasks()[0]]
        env.reset(options={"task": task.index})
        benchmark = get(ic.env_name)
        _, reward, done, _, _ = env.step(benchmark.gold_action(task))
        if not done:
            _, reward, done, _, _ = env.step(benchmark.gold_submit(task))
        rewards[spec.id] = [reward, done]
    finally:
        env.close()
print(json.dumps(rewards))
"""


def test_a_pickled_spec_makes_a_working_env_in_a_fresh_process():
    specs = []
    for name in NAMES:
        extra = {"limits": Limits(timeout=20.0)} if name in ("bash", "python", "ctf") else {}
        if name == "bash":
            extra["sandbox"] = partial(create_sandbox, "bwrap", layout=Layout())
        env = gym.make(env_id(name), dataset=testing.small_dataset(name), **extra)
        specs.append(env.spec)
        env.close()
    done = subprocess.run([sys.executable, "-c", CHILD], input=pickle.dumps(specs),
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    rewards = json.loads(done.stdout)
    assert rewards == {env_id(name): [1.0, True] for name in NAMES}
