"""The contract every registered environment must pass (on a small dataset).

The checks themselves live in :mod:`intercode.testing`, which plugin authors run too;
here each one runs on every registered benchmark, plus what is specific to the built-ins.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from backends import backends, need

import intercode
from intercode import testing
from intercode.benchmarks import benchmarks
from intercode.envs.registration import env_id
from intercode.errors import ConfigError

ENVIRONMENTS = [b.name for b in benchmarks()]
SMALL = {name: testing.small_dataset(name) for name in ENVIRONMENTS}
ECHO = {name: testing.echo(name, "rendered") for name in ENVIRONMENTS}

# the keyword naming the sandbox backend, per environment (SQL's ``backend`` is its engine)
SANDBOX_BACKEND = {"bash": "backend", "python": "backend", "ctf": "backend",
                   "sql": "sandbox_backend"}
# every environment on the default backend; the built-ins on docker too
ENV_BACKENDS = [(name, "bwrap") for name in sorted(ENVIRONMENTS)] + [
    (name, "docker") for name in sorted(SANDBOX_BACKEND) if "docker" in backends()]


@pytest.fixture(params=ENV_BACKENDS, scope="module", ids=lambda p: f"{p[0]}-{p[1]}")
def env(request):
    name, backend = request.param
    kwargs = {}
    if backend != "bwrap":
        need(backend)
        kwargs[SANDBOX_BACKEND[name]] = backend
    e = gym.make(env_id(name), dataset=SMALL[name], **kwargs)
    yield e
    e.close()


def test_the_four_built_in_environments_are_registered():
    assert {"bash", "sql", "python", "ctf"} <= set(ENVIRONMENTS)


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_spec_is_sane(name):
    testing.check_spec(name)


def test_check_env_passes(env):
    testing.check_gymnasium(env)



@pytest.mark.parametrize("name", sorted(SANDBOX_BACKEND))
def test_sandbox_backend_is_a_setting(name):
    with pytest.raises(ConfigError, match="unknown sandbox backend 'nope'"):
        intercode.make(name, dataset=SMALL[name], **{SANDBOX_BACKEND[name]: "nope"})
    e = intercode.make(name, dataset=SMALL[name], **{SANDBOX_BACKEND[name]: "bwrap"})
    try:
        e.reset(options={"task": 0})
        assert "rendered" in e.step(ECHO[name])[0]
    finally:
        e.close()


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_intercode_make_is_gymnasium_make(name):
    testing.check_make(name)


def test_reset_with_task_option_returns_the_query(env):
    testing.check_reset(env)


def test_seed_picks_tasks_reproducibly(env):
    testing.check_seeding(env)


def test_invalid_task_option_is_a_clear_error(env):
    testing.check_invalid_tasks(env)


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_step_before_reset_and_after_the_end_and_non_string_actions(name):
    testing.check_step_errors(name)


def test_skip_ends_with_zero(env):
    testing.check_skip(env)


def test_submit_ends_with_the_reward_and_evaluate_does_not_end(env):
    testing.check_submit(env)


def test_the_gold_of_ctf_is_a_submission_that_scores_one():
    # CTF scores the submitted flag, not the state
    e = gym.make(env_id("ctf"), dataset=SMALL["ctf"])
    try:
        e.reset(options={"task": 0})
        gold = e.unwrapped.task.gold
        assert e.unwrapped.evaluate().reward == 0.0
        _, reward, terminated, truncated, info = e.step(f"submit {gold}")
        assert terminated and not truncated and reward == 1.0 and info["success"]
        assert "reward_parts" in info
    finally:
        e.close()


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_turn_limit_truncates(name):
    testing.check_turn_limit(name)


def test_info_of_an_action(env):
    testing.check_echo(env)


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_render_ansi(name):
    testing.check_render(name)


def test_public_api_is_pinned():
    assert sorted(intercode.__all__) == sorted([
        "BashEnv", "BashTask", "ConfigError", "Dataset", "DatasetError", "EnvStateError",
        "IntercodeEnv", "IntercodeError", "Limits", "RewardError", "SandboxError",
        "SandboxUnavailableError", "SqlEnv", "SqlLimits", "SqlTask", "Task", "__version__",
        "dataset_names", "load_dataset", "make", "PythonEnv", "PythonTask", "CtfEnv", "CtfTask",
        "TaskUnavailable", "ObservationSpaceError", "Snapshot", "SnapshotError",
        "SnapshotUnsupported",
    ])
