"""Replaying recorded episodes: hand-made ones exactly, upstream's within measured bounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intercode.agents.replay import load_trajectories
from intercode.datasets.known_issues import known_issues
from intercode.errors import ConfigError
from intercode.runner.run import execute, run_config

DATA = Path(__file__).resolve().parents[1] / "data"


def run_replay(tmp_path, dataset, trajectories, env="bash", **kw):
    cfg = run_config(env=env, dataset=dataset, agent="replay", output=tmp_path / "run",
                    trajectories=str(trajectories), workers=2, **kw)
    summary = execute(cfg, progress=False)
    records = {}
    for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        records[rec["task"]] = rec
    return summary, records


def test_loader_marks_replies_without_code_and_blocked_turns():
    episodes = load_trajectories(DATA / "recorded_bash_demo.json")
    assert [a.valid for a in episodes[0].actions] == [True, False, True]
    assert [a.valid for a in episodes[3].actions] == [True, True, True, False]
    assert episodes[0].max_reward == 1.0


def test_hand_made_episodes_replay_with_the_recorded_scores(tmp_path):
    summary, records = run_replay(tmp_path, "bash-demo", DATA / "recorded_bash_demo.json",
                                  tasks=(0, 3))
    assert summary["ok"] == 2 and summary["errors"] == 0
    assert [t["reward"] for t in records[0]["turns"]] == [pytest.approx(0.67), 0.0, 1.0]
    assert records[0]["turns"][1]["valid"] is False
    # turn 1 made an empty directory, invisible to the diff: 0.01 + 0.05 + 0.33 + 0.33
    assert [t["reward"] for t in records[3]["turns"]] == [pytest.approx(0.72),
                                                         pytest.approx(0.67), 1.0, 0.0]
    assert records[0]["reward"] == 1.0 and records[0]["best_turn"] == 2


def test_a_chosen_task_without_a_recording_is_refused_up_front(tmp_path):
    with pytest.raises(ConfigError, match=r"no episode of task\(s\) 1, 2; leave out --tasks"):
        run_replay(tmp_path, "bash-demo", DATA / "recorded_bash_demo.json", tasks=(0, 1, 2))
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_without_tasks_a_replay_runs_exactly_the_recorded_tasks(tmp_path):
    recorded = load_trajectories(DATA / "recorded_bash_demo.json")
    summary, records = run_replay(tmp_path, "bash-demo", DATA / "recorded_bash_demo.json")
    assert sorted(records) == sorted(recorded) and len(recorded) < 8  # bash-demo has 8
    assert summary["requested"] == len(recorded) and summary["errors"] == 0


def test_recordings_of_tasks_the_dataset_lacks_are_one_line(tmp_path):
    path = tmp_path / "far.jsonl"
    path.write_text(json.dumps({"task": 500, "status": "ok", "reward": 0, "turns": []}) + "\n")
    with pytest.raises(ConfigError, match=r"tasks the dataset does not have .*: 500"):
        run_replay(tmp_path, "bash-demo", path)


def test_our_own_results_replay(tmp_path):
    _, first = run_replay(tmp_path / "a", "bash-demo", DATA / "recorded_bash_demo.json",
                          tasks=(0, 3))
    source = tmp_path / "a" / "run" / "results.jsonl"
    _, again = run_replay(tmp_path / "b", "bash-demo", source, tasks=(0, 3))
    for task in (0, 3):
        assert [t["reward"] for t in again[task]["turns"]] == \
            [t["reward"] for t in first[task]["turns"]]


def test_upstream_gpt35_fs4_fidelity(tmp_path, mirror):
    """Measured: 21 of 27 episodes reach the recorded best reward (see the notes)."""
    path = mirror / "results/bash/gpt-3.5/ic_bash_multiturn_gpt-3.5_10_turns_fs_4.json"
    recorded = load_trajectories(path)
    summary, records = run_replay(tmp_path, "nl2bash-fs4", path)
    assert summary["errors"] == 0 and summary["ok"] == 27
    same = sum(abs(records[t]["reward"] - r.max_reward) <= 0.011 for t, r in recorded.items())
    assert same >= 19


@pytest.mark.parametrize("backend", ["sqlite", "mysql"])
def test_upstream_gpt35_sql_fidelity(tmp_path, mirror, request, backend):
    """Measured: 96.3 % (SQLite) and 98.2 % (MariaDB) of the episodes that can be scored
    reach the recorded best reward; the rest are explained in the notes (engine row
    order, ties, leaked state). On a server the 6 golds that are not valid MySQL
    (known issues) end as errors: upstream scored any empty answer 1.0 there."""
    url = request.getfixturevalue("mysql_url") if backend == "mysql" else None
    path = mirror / "results/sql/gpt-3.5/ic_sql_multiturn_gpt-3.5_10_turns.json"
    recorded = load_trajectories(path)
    summary, records = run_replay(tmp_path, "spider-dev", path, env="sql", sql_backend=backend,
                                  mysql_url=url)
    broken = {t for t, issue in known_issues("spider-dev").items()
              if issue.kind == "broken_gold"} if backend == "mysql" else set()
    assert {t for t, rec in records.items() if rec["status"] == "error"} == broken
    assert summary["ok"] == 1034 - len(broken)
    scored = {t: r for t, r in recorded.items() if t not in broken}
    same = sum(abs(records[t]["reward"] - r.max_reward) <= 0.011 for t, r in scored.items())
    assert same / len(scored) >= (0.95 if backend == "sqlite" else 0.97)


# Spider task 218 as GPT-4 played it in InterCode's run (upstream's
# data/results/sql/gpt-4/ic_sql_multiturn_gpt-4_10_turns.json, episode "218"); upstream
# scored its last action 1.0. orchestra.Orchestra is table orchestra's column.
GPT4_TASK_218 = [
    "SELECT conductor_name, orchestra_name FROM conductors JOIN orchestras ON "
    "conductors.id = orchestras.conductor_id",
    "SELECT conductor_name, orchestra_name FROM conductor JOIN orchestra ON "
    "conductor.id = orchestra.conductor_id",
    "SELECT conductor.name AS conductor_name, orchestra.name AS orchestra_name FROM "
    "conductor JOIN orchestra ON conductor.id = orchestra.conductor_id",
    "SELECT conductor.name AS conductor_name, orchestra.orchestra_name FROM conductor JOIN "
    "orchestra ON conductor.id = orchestra.conductor_id",
    "SHOW COLUMNS FROM orchestra",
    "SELECT conductor.name AS conductor_name, orchestra.Orchestra FROM conductor JOIN "
    "orchestra ON conductor.id = orchestra.Conductor_ID",
    "SHOW COLUMNS FROM conductor",
    "SELECT conductor.Name AS conductor_name, orchestra.Orchestra FROM conductor JOIN "
    "orchestra ON conductor.Conductor_ID = orchestra.Conductor_ID",
]


@pytest.mark.parametrize("backend", ["sqlite", "mysql"])
def test_recorded_table_column_namesakes_score_as_upstream(tmp_path, mirror, request, backend):
    """Tasks 218 (GPT-4's run) and 478 (GPT-3.5's file) end with ``orchestra.Orchestra``,
    table orchestra's column in database orchestra: upstream scored both 1.0."""
    url = request.getfixturevalue("mysql_url") if backend == "mysql" else None
    gpt4 = tmp_path / "gpt4_218.json"
    gpt4.write_text(json.dumps({"218": {"task_id": 218, "turn_history": {
        "actions": GPT4_TASK_218, "rewards": [0.0] * 7 + [1.0]},
        "summary": {"max_reward": 1.0}}}))
    gpt35 = mirror / "results/sql/gpt-3.5/ic_sql_multiturn_gpt-3.5_10_turns.json"
    assert "orchestra.Orchestra" in load_trajectories(gpt35)[478].actions[-1].text
    for path, task in ((gpt4, 218), (gpt35, 478)):
        summary, records = run_replay(tmp_path / str(task), "spider-dev", path, env="sql",
                                      sql_backend=backend, mysql_url=url, tasks=(task,))
        assert summary["errors"] == 0
        last = records[task]["turns"][-1]
        assert last["valid"], last["observation"]
        assert last["reward"] == 1.0 and records[task]["reward"] == 1.0


@pytest.mark.parametrize(("quirks", "least"), [(False, 0.88), (True, 0.97)])
def test_upstream_gpt35_python_fidelity(tmp_path, mirror, quirks, least):
    """Measured: 90.6 % of 117 episodes reach the recorded best reward, 99.1 % when the
    gold leaks into the agent's interpreter after each scoring, as it did upstream."""
    path = mirror / "results/python/gpt-3.5/ic_python_multiturn_gpt-3.5_7_turns.json"
    recorded = load_trajectories(path)
    summary, records = run_replay(tmp_path, "mbpp", path, env="python",
                                  tasks=tuple(sorted(recorded)), upstream_quirks=quirks)
    assert summary["errors"] == 0 and summary["ok"] == len(recorded) == 117
    same = sum(abs(records[t]["reward"] - r.max_reward) <= 0.011 for t, r in recorded.items())
    assert same / 117 >= least


def test_hand_made_ctf_episodes_get_upstreams_flag_checks(tmp_path):
    path = DATA / "recorded_ctf.json"
    summary, records = run_replay(tmp_path, "intercode-ctf", path, env="ctf", tasks=(4, 5, 18, 23))
    assert summary["errors"] == 0 and summary["ok"] == 4
    recorded = json.loads(path.read_text())
    for task, episode in recorded.items():
        history = episode["turn_history"]
        turns = records[int(task)]["turns"]
        assert [t["reward"] for t in turns] == [float(r) for r in history["rewards"]], task
        assert records[int(task)]["reward"] == float(episode["summary"]["max_reward"])
        for turn, action, seen in zip(turns, history["actions"], history["observations"],
                                      strict=True):
            assert turn["action"] == action
            if not action.startswith("submit") and turn["valid"]:
                assert turn["observation"] == seen, (task, action)
