"""``exec_match`` in the official evaluator's two settings: with ``--keep_distinct`` (our
default) and without (``exec_match_nodistinct``: DISTINCT deleted from both queries)."""

from __future__ import annotations

import json

import pytest

from intercode.cli import main
from intercode.envs.sql import SqlEnv
from intercode.errors import ConfigError

# task 752 (concert_singer): SELECT DISTINCT country FROM singer WHERE age > 20 -> 3 rows
# of 6 singers; task 3 (orchestra): SELECT count(DISTINCT Nationality) FROM conductor
CASES = [
    # (task, agent's answer, exec_match, exec_match_nodistinct)
    (752, "SELECT DISTINCT country FROM singer WHERE age > 20", True, True),
    (752, "SELECT country FROM singer WHERE age > 20", False, True),
    (752, "SELECT country FROM singer WHERE age > 20 GROUP BY country", True, False),
    (3, "SELECT count(DISTINCT Nationality) FROM conductor", True, True),
    (3, "SELECT COUNT(*) FROM (SELECT Nationality FROM conductor GROUP BY Nationality) t",
     True, False),
    (3, "SELECT count(Nationality) FROM conductor", False, True),
    (3, "SELECT count(*) FROM conductor WHERE Nationality = 'nowhere'", False, False),
]


@pytest.fixture(params=["sqlite", "mysql"], scope="module")
def envs(request):
    url = request.getfixturevalue("mysql_url") if request.param == "mysql" else None
    made = {m: SqlEnv("spider-dev", backend=request.param, mysql_url=url, metric=m)
            for m in ("exec_match", "exec_match_nodistinct")}
    yield made
    for env in made.values():
        env.close()


@pytest.mark.parametrize(("task", "answer", "keep", "nodistinct"), CASES)
def test_the_two_settings(envs, task, answer, keep, nodistinct):
    for metric, expected in (("exec_match", keep), ("exec_match_nodistinct", nodistinct)):
        env = envs[metric]
        env.reset(options={"task": task})
        obs, *_ = env.step(answer)
        info = env.evaluate().info
        assert info["exec_match"] is expected, (metric, answer, obs)
        assert info["exec_metric"] == metric


def test_without_distinct_the_agents_query_runs_on_a_pristine_copy(envs):
    """As the official evaluator, which runs each final query on the original file."""
    env = envs["exec_match_nodistinct"]
    env.reset(options={"task": 752})
    env.step("DELETE FROM singer")
    env.step("SELECT DISTINCT country FROM singer WHERE age > 20")
    assert env.evaluate().info["exec_match"] is True
    env.step("SELECT country FROM singer WHERE age > 20")  # unchanged: its own result
    assert env.evaluate().info["exec_match"] is False
    assert env.step("SELECT count(*) FROM singer")[0] == "[(0,)]"  # the agent's state stays


def test_an_unknown_metric_is_one_line(capsys, tmp_path):
    with pytest.raises(ConfigError, match="unknown SQL metric 'f1'"):
        SqlEnv("spider-dev", metric="f1")
    assert main(["eval", "bash", "--sql-metric", "exec_match_nodistinct"]) == 2
    assert "--sql-metric applies only to the sql environment" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval", "sql", "--sql-metric", "f1"])
    assert "invalid choice: 'f1'" in capsys.readouterr().err


def test_the_metric_is_recorded_in_the_config_and_the_records(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["eval", "sql", "--agent", "gold", "--tasks", "752", "--output", str(out),
                 "--sql-metric", "exec_match_nodistinct", "--no-progress", "--workers", "1"])
    assert code == 0, capsys.readouterr().err
    assert json.loads((out / "config.json").read_text())["sql_metric"] == \
        "exec_match_nodistinct"
    record = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert record["reward"] == 1.0
    assert "exec_match_nodistinct" in json.dumps(record)
