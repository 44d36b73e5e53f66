"""intercode.integrations.raycluster.EnvPool: remote environments reset and stepped in batches."""

from __future__ import annotations

import time
from typing import Any

import pytest

from intercode.datasets import load_dataset
from intercode.errors import ConfigError, EnvStateError, RunAborted
from intercode.integrations.raycluster import EnvPool


@pytest.fixture(scope="module")
def pool(ray_cluster):
    with EnvPool("bash", "bash-demo", size=2) as p:  # a CPU of the cluster stays free
        yield p


def gold(task: int) -> str:
    return load_dataset("bash-demo")[task].gold


def test_reset_and_step_many_at_once(pool):
    assert pool.size == 2 and pool.num_tasks == 8 and len(set(pool.nodes())) == 2
    pool.reset(tasks=[0, 1])
    resets = pool.gather()
    assert sorted(resets) == [0, 1]
    queries = {t.query for t in load_dataset("bash-demo")}
    assert all(r.kind == "reset" and r.error is None and r.observation in queries
               for r in resets.values())
    pool.step({i: gold(i) for i in range(2)})
    steps = pool.gather()
    pool.step({i: "submit" for i in range(2)})
    submitted = pool.gather()
    for i in range(2):
        assert steps[i].kind == "step" and steps[i].error is None
        assert submitted[i].terminated and submitted[i].reward == 1.0
    assert pool.in_flight == 0 and pool.poll(timeout=0) == []


def test_results_arrive_as_they_finish(pool):
    pool.reset(tasks=[0, 1])
    pool.gather()
    pool.step({0: "sleep 2; echo slow", 1: "echo quick"})
    assert pool.in_flight == 2
    first = pool.poll(max_results=1)
    assert [r.env_id for r in first] == [1] and "quick" in (first[0].observation or "")
    (last,) = list(pool.results())
    assert last.env_id == 0 and "slow" in (last.observation or "")


def test_past_the_bound_a_submission_waits_for_a_result(pool):
    pool.reset(tasks=[0, 1])
    pool.gather()
    pool.max_in_flight = 1
    try:
        pool.step({0: "sleep 1; echo first"})
        pool.step({1: "echo second"})  # waits for 0's result, kept for the next poll
        assert pool.in_flight == 1
        got = list(pool.results())
    finally:
        pool.max_in_flight = pool.size
    assert [r.env_id for r in got] == [0, 1] and "first" in (got[0].observation or "")


def test_one_request_per_environment_and_bad_values(pool):
    pool.reset(env_ids=[0], tasks=[3])
    with pytest.raises(EnvStateError, match="in flight"):
        pool.step({0: "ls"})
    pool.gather()
    for bad in (lambda: pool.step({3: "ls"}), lambda: pool.step({True: "ls"}),
                lambda: pool.step({0: b"ls"}),  # type: ignore[dict-item]
                lambda: pool.reset(env_ids=[0, 0]), lambda: pool.reset(tasks=[0]),
                lambda: pool.reset(env_ids=[1], tasks=["0"])):  # type: ignore[list-item]
        with pytest.raises(ConfigError):
            bad()
    assert pool.in_flight == 0


def test_an_infrastructure_fault_is_an_error_not_a_reward(pool):
    pool.reset(env_ids=[1], tasks=[10**6])  # no such task: the environment says so
    (result,) = pool.poll()
    assert result.env_id == 1 and result.error and result.reward is None
    pool.reset(env_ids=[1], tasks=[0])
    (again,) = pool.poll()
    assert again.error is None and again.observation


def wait_dead(handle: Any, limit: float = 60.0) -> None:
    """Return once the killed actor ``handle`` answers no call any more."""
    import ray

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            ray.get(handle.__ray_ready__.remote(), timeout=10)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers")


def test_a_dead_actor_is_replaced(ray_cluster):
    import ray

    with EnvPool("bash", "bash-demo", size=1) as pool:
        pool.reset(tasks=[0])
        pool.gather()
        handle = pool._slots[0].handle
        ray.kill(handle, no_restart=True)
        wait_dead(handle)  # a kill is asynchronous: a call sent at once may still run
        pool.step({0: "ls"})
        (lost,) = pool.poll()
        assert lost.error and "died" in lost.error and lost.reward is None
        pool.reset(tasks=[0])  # on a fresh actor
        (fresh,) = pool.poll()
        assert fresh.error is None and fresh.observation
    with pytest.raises(EnvStateError, match="closed"):
        pool.reset()
    pool.close()  # idempotent


def test_a_node_without_bwrap_is_named(broken_node):
    node = broken_node("nobwrap")
    with pytest.raises(RunAborted) as caught:
        EnvPool("bash", "bash-demo", size=1, cpus=0, actor_options={"resources": {"nobwrap": 1}})
    assert node.node_id[:8] in str(caught.value) and "bubblewrap" in str(caught.value)


def test_bad_sizes(ray_cluster):
    for kwargs in ({"size": 0}, {"size": True}, {"size": 2, "max_in_flight": 0}):
        with pytest.raises(ConfigError):
            EnvPool("bash", "bash-demo", **kwargs)
