"""Inspect logs replay with ``--agent replay``: a native Inspect run (Try Again and
react) and an intercode run exported to Inspect give back the same rewards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_helpers import fenced, run_inspect, scores, tasks

from intercode.agents.replay import load_trajectories
from intercode.benchmarks import get
from intercode.errors import DatasetError
from intercode.integrations.inspectai.export import export_run
from intercode.integrations.inspectai.tasks import intercode_task
from intercode.runner.run import RunConfig, execute


def _replay(tmp_path: Path, env: str, dataset: str, log: Path) -> dict[int, dict]:
    out = tmp_path / "replayed"
    execute(RunConfig(env=env, dataset=dataset, agent="replay", trajectories=str(log),
                      output=out, workers=1), progress=False)
    return {json.loads(x)["task"]: json.loads(x)
            for x in (out / "results.jsonl").read_text().splitlines()}


def _log_file(log_dir: Path) -> Path:
    (path,) = [p for p in log_dir.iterdir() if p.suffix in (".eval", ".json")]
    return path


def test_a_try_again_run_in_inspect_replays_with_its_rewards(tmp_path):
    env, dataset, indices = "sql", "spider-dev", [0, 1, 2]
    bench = get(env)
    picked = tasks(dataset, indices)
    scripts = {picked[0].query: ["no code here", fenced(env, "SELECT 1"),
                                 fenced(env, bench.gold_action(picked[0]))],
               picked[1].query: [fenced(env, bench.gold_action(picked[1]))],
               picked[2].query: [fenced(env, "SELECT 1")]}
    logs = tmp_path / "logs"
    log = run_inspect(intercode_task(env, dataset, tasks=indices, turns=3), scripts, logs)
    recorded = load_trajectories(_log_file(logs))
    assert [a.valid for a in recorded[0].actions] == [False, True, True]
    assert recorded[1].actions[0].text.strip() == bench.gold_action(picked[1]).strip()
    replayed = _replay(tmp_path, env, dataset, _log_file(logs))
    for i, (reward, success) in scores(log).items():
        assert (replayed[i]["reward"], replayed[i]["success"]) == (reward, success), i


def test_a_react_run_in_inspect_replays_its_tool_calls(tmp_path):
    env, dataset = "bash", "bash-demo"
    bench = get(env)
    picked = tasks(dataset, [2, 3])
    scripts = {t.query: [("execute", {"code": bench.gold_action(t) if i == 2 else "ls"}),
                         ("submit", {"answer": ""})] for i, t in picked.items()}
    logs = tmp_path / "logs"
    log = run_inspect(intercode_task(env, dataset, strategy="react", tasks=[2, 3], turns=4),
                      scripts, logs)
    replayed = _replay(tmp_path, env, dataset, _log_file(logs))
    got = scores(log)
    assert got[2][0] == 1.0 and got[3][0] < 1.0
    for i in (2, 3):
        assert replayed[i]["reward"] == pytest.approx(got[i][0]), i


def test_an_exported_intercode_run_replays_to_the_same_rewards(tmp_path):
    original = tmp_path / "gold"
    execute(RunConfig(env="bash", dataset="bash-demo", agent="gold", output=original,
                      workers=1, tasks=(0, 1, 2)), progress=False)
    exported = export_run(original, tmp_path / "gold.eval")
    replayed = _replay(tmp_path, "bash", "bash-demo", exported)
    assert {t: r["reward"] for t, r in replayed.items()} == {0: 1.0, 1: 1.0, 2: 1.0}


def test_a_damaged_log_is_one_error(tmp_path):
    bad = tmp_path / "bad.eval"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(DatasetError, match="not a readable Inspect log"):
        load_trajectories(bad)
