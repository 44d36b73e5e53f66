"""`intercode eval --executor ray` on a 3-node cluster: the same records as the local
executor, node losses, a refused key, nodes that cannot run the environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from intercode.errors import ConfigError, RunAborted
from intercode.integrations.raycluster.executor import RayExecutor, RayExecutorFactory
from intercode.runner.run import RunConfig, execute
from intercode.runner.worker import WorkerSpec
from intercode.sandbox.rootfs import same_root

NODES = 3  # the session's cluster (conftest.py): one CPU each

# a few tasks of every built-in environment (gold actions are quick)
GOLD_RUNS = [("bash", "bash-demo", (0, 1, 2, 3)), ("sql", "spider-dev", (0, 1, 2)),
             ("python", "mbpp", (0, 1, 2)), ("ctf", "intercode-ctf", (0, 2, 3))]


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def essence(rec: dict[str, Any]) -> tuple[Any, ...]:
    """What must not depend on where an episode ran."""
    return (rec["task"], rec["status"], rec["reward"], rec["success"],
            [t["action"] for t in rec["turns"]], [t["observation"] for t in rec["turns"]],
            rec.get("reward_info"))


@pytest.mark.parametrize(("env", "dataset", "tasks"), GOLD_RUNS, ids=[r[0] for r in GOLD_RUNS])
def test_gold_runs_give_the_local_records(ray_cluster, tmp_path, env, dataset, tasks):
    local = execute(RunConfig(env=env, dataset=dataset, agent="gold", tasks=tasks, workers=1,
                              output=tmp_path / "local"), progress=False)
    remote = execute(RunConfig(env=env, dataset=dataset, agent="gold", tasks=tasks,
                               workers=NODES, executor=RayExecutorFactory(),
                               output=tmp_path / "ray"),
                     progress=False)
    mine = sorted(map(essence, records(tmp_path / "ray")))
    assert mine == sorted(map(essence, records(tmp_path / "local")))
    assert [m[0] for m in mine] == sorted(tasks)  # each task once
    assert all(m[1] == "ok" and m[2] == 1.0 for m in mine)
    assert {k: v for k, v in remote.items() if k != "duration_s"} == \
        {k: v for k, v in local.items() if k != "duration_s"}
    config = json.loads((tmp_path / "ray" / "config.json").read_text())
    assert config["executor"] == "ray"
    # the root the actors' nodes mount is recorded, the same as the local run's
    local_root = json.loads((tmp_path / "local" / "config.json").read_text())["rootfs"]
    assert local_root is not None and config["rootfs"] is not None
    assert same_root(local_root, config["rootfs"])


def test_a_resumed_ray_run_keeps_its_root(ray_cluster, tmp_path):
    out = tmp_path / "run"
    execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", tasks=(0,), workers=1,
                      executor=RayExecutorFactory(), output=out), progress=False)
    config = json.loads((out / "config.json").read_text())
    config["rootfs"] = {**config["rootfs"], "identity": "0" * 64}  # made on another root
    (out / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="cannot resume: the run used the pinned root 0000"):
        execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", tasks=(0, 1),
                          workers=1, executor=RayExecutorFactory(), output=out, resume=True),
                progress=False)
    assert len(records(out)) == 1  # nothing ran on the other root


def test_actors_on_two_roots_stop_the_run():
    told = []
    executor = RayExecutor(WorkerSpec(env="bash", dataset="bash-demo", agent="gold"), 2,
                           on_root=told.append)
    pinned = {"kind": "pinned", "path": "/a/root", "identity": "1" * 64}
    executor._check_root(pinned, "node-a")
    executor._check_root({**pinned, "path": "/b/root"}, "node-b")  # same identity: fine
    assert told == [pinned]
    for other in ({**pinned, "identity": "2" * 64}, {"kind": "host", "path": "/"}, None):
        with pytest.raises(RunAborted, match="node node-c mounts another root file system"):
            executor._check_root(other, "node-c")


def write_slow_trajectories(path: Path, tasks: int, seconds: float) -> None:
    with path.open("w") as fh:
        for t in range(tasks):
            turns = [{"action": f"sleep {seconds}", "observation": "", "reward": 0}] * 2
            fh.write(json.dumps({"task": t, "status": "ok", "reward": 0, "turns": turns}) + "\n")


def test_a_node_removed_mid_run_loses_and_duplicates_nothing(ray_cluster, add_node, tmp_path):
    victim = add_node()
    traj = tmp_path / "slow.jsonl"
    write_slow_trajectories(traj, 8, 1.5)  # episodes outlast the node's removal
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    executor = RayExecutor(spec, workers=NODES + 1)  # one actor per CPU: one on the victim
    got: list[dict[str, Any]] = []
    removed: list[str] = []

    def on_record(rec: dict[str, Any]) -> None:
        got.append(rec)
        busy_there = [a for a in executor._actors
                      if a.tasks and victim.node_id[:8] in a.node]
        if not removed and busy_there:
            removed.append(str(busy_there[0].tasks[0]))
            ray_cluster.remove_node(victim)

    executor.run(list(range(8)), on_record)
    assert removed, "no episode was in flight on the removed node"
    assert sorted(r["task"] for r in got) == list(range(8))  # each exactly once
    assert all(r["status"] == "ok" and r["reward"] is not None for r in got), [
        (r["task"], r["status"], r.get("error")) for r in got]
    # the victim's episode in flight (or the next one given to it before its loss was
    # seen) was run again elsewhere, and recorded once
    assert executor.lost


def test_a_task_whose_actors_keep_dying_is_an_error_once(ray_cluster, tmp_path):
    """An episode that kills its actor each time: retried a bounded number of times,
    then one error record (never a reward)."""
    import ray

    traj = tmp_path / "slow.jsonl"
    write_slow_trajectories(traj, 2, 0.2)
    spec = WorkerSpec(env="bash", dataset="bash-demo", agent="replay", trajectories=str(traj))
    executor = RayExecutor(spec, workers=1, retries=1)
    got: list[dict[str, Any]] = []

    original = executor._dispatch

    def dispatch_and_kill(state: Any) -> None:
        original(state)
        for actor in executor._actors:
            if actor.tasks[:1] == [1]:  # task 1 runs there
                ray.kill(actor.handle, no_restart=True)

    executor._dispatch = dispatch_and_kill  # type: ignore[method-assign]
    executor.run([0, 1], got.append)
    by_task = {r["task"]: r for r in got}
    assert len(got) == 2 and by_task[0]["status"] == "ok"
    assert by_task[1]["status"] == "error" and by_task[1]["reward"] is None
    assert "died during this episode, 2 times" in by_task[1]["error"]


def test_a_refused_key_stops_the_whole_run(ray_cluster, tmp_path, monkeypatch):
    from intercode.llm.client import ModelConfig
    from intercode.llm.scripted_server import ScriptedChatServer, sequence

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with (ScriptedChatServer(sequence(["x"]), api_key="sk-right") as server,
          pytest.raises(RunAborted, match="refused the credentials")):
        execute(RunConfig(env="bash", dataset="bash-demo", agent="try-again", max_turns=2,
                          model=ModelConfig(model="scripted", base_url=server.url),
                          workers=2, executor=RayExecutorFactory(), output=tmp_path / "run"),
                progress=False)
    results = tmp_path / "run" / "results.jsonl"
    assert not results.exists() or results.read_text() == ""


def test_model_calls_run_on_the_actors_with_the_drivers_key(ray_cluster, tmp_path,
                                                             monkeypatch):
    """The key is the driver's (the nodes' own environment does not have it); actors
    that mostly wait for a model may reserve less than a CPU each."""
    from intercode.datasets import load_dataset
    from intercode.llm.client import ModelConfig
    from intercode.llm.gold_responder import GoldResponder
    from intercode.llm.scripted_server import ScriptedChatServer

    monkeypatch.setenv("INTERCODE_TEST_RAY_KEY", "sk-right")
    with ScriptedChatServer(GoldResponder(load_dataset("bash-demo"), detour=0),
                            api_key="sk-right") as server:
        summary = execute(RunConfig(env="bash", dataset="bash-demo", agent="try-again",
                                    max_turns=3, tasks=(0, 1, 2),
                                    model=ModelConfig(model="scripted", base_url=server.url,
                                                      api_key_env="INTERCODE_TEST_RAY_KEY"),
                                    workers=4, executor=RayExecutorFactory(actor_cpus=0.5),
                                    output=tmp_path / "run"),
                          progress=False)
    assert summary["ok"] == summary["success"] == 3 and summary["errors"] == 0
    assert all(r["llm"]["calls"] >= 1 for r in records(tmp_path / "run"))


@pytest.mark.parametrize(("broken", "expected"), [
    ("nobwrap", "not an executable program"), ("nodata", "missing from INTERCODE_DATA_MIRROR"),
])
def test_a_node_that_cannot_run_the_environment_fails_fast(broken_node, broken, expected):
    node = broken_node(broken)
    spec = WorkerSpec(env="sql", dataset="spider-dev", agent="gold")
    executor = RayExecutor(spec, workers=1, cpus=0, actor_options={"resources": {broken: 1}})
    with pytest.raises(RunAborted) as caught:
        executor.run([0, 1], lambda rec: pytest.fail(f"a record: {rec}"))
    text = str(caught.value)
    assert expected in text and node.node_id[:8] in text and "\n" not in text
