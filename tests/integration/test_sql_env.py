"""The SQL environment end to end, on both backends."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from intercode.envs.sql import SqlEnv
from intercode.errors import RewardError
from intercode.sql.backend import SqlLimits

EXAMPLE_SQL = Path(__file__).resolve().parents[2] / "examples" / "datasets" / "sql"


@pytest.fixture(params=["sqlite", "mysql"], scope="module")
def env(request):
    url = request.getfixturevalue("mysql_url") if request.param == "mysql" else None
    e = SqlEnv("spider-dev", backend=request.param, mysql_url=url)
    yield e
    e.close()


def test_reset_connects_to_the_tasks_database(env):
    query, info = env.reset(options={"task": 0})
    assert query.startswith("What are the names of poker players")
    assert info["database"] == "poker_player" and info["hardness"] == "medium"
    assert ("SQLite" in info["dialect"]) == (env.backend.name == "sqlite")
    obs, *_ = env.step("SHOW TABLES")
    assert obs == "[('people',), ('poker_player',)]"


def test_gold_scores_one_and_the_reward_parts(env):
    env.reset(options={"task": 0})
    env.step(env.task.gold)
    _, reward, terminated, _, info = env.step("submit")
    assert reward == 1.0 and info["success"] and info["exec_match"] and terminated
    assert info["reward_parts"]["iou"] == 1.0


def test_reversed_order_scores_negative(env):
    env.reset(options={"task": 0})  # ORDER BY Final_Table_Made
    gold = env.task.gold
    env.step(gold.replace("ORDER BY T2.Final_Table_Made", "ORDER BY T2.Final_Table_Made DESC"))
    ev = env.evaluate()
    assert ev.reward < 0 and not ev.info["exec_match"]


def test_errors_and_statements_without_rows_score_zero(env):
    env.reset(options={"task": 0})
    obs, _, _, _, info = env.step("SELECT nope FROM people")
    assert obs.startswith("Error executing query:") and info["error"]
    assert env.evaluate().reward == 0.0
    env.step("UPDATE people SET Name = 'x' WHERE People_ID = -1")
    assert env.evaluate().reward == 0.0


def test_the_agents_changes_never_reach_the_gold(env):
    env.reset(options={"task": 0})
    env.step("DELETE FROM poker_player")
    env.step("DROP TABLE people")
    assert env.gold_result().ok and len(env.gold_result().rows) == 5
    env.reset(options={"task": 0})
    assert env.step("SELECT count(*) FROM people")[0] == "[(7,)]"


def test_a_failing_gold_is_an_error_not_an_empty_gold():
    e = SqlEnv("spider-dev", backend="sqlite")
    try:
        e.reset(options={"task": 0})
        e._gold_result = e.backend.session().execute("SELECT broken")  # a failed gold run
        e.step("SELECT Name FROM people WHERE 1 = 0")
        e.task = dataclasses.replace(e.task, gold="SELECT broken")  # and failing again
        with pytest.raises(RewardError, match="the gold query failed"):
            e.evaluate()
    finally:
        e.close()


def test_a_failed_gold_run_is_run_again_before_scoring():
    e = SqlEnv("spider-dev", backend="sqlite")
    try:
        e.reset(options={"task": 0})
        e._gold_result = e.backend.session().execute("SELECT broken")  # a failed gold run
        e.step("SELECT Name FROM people WHERE 1 = 0")
        ev = e.evaluate()
        assert ev.reward < 1 and not ev.info["gold_failed"] and ev.info["gold_rows"] == 5
    finally:
        e.close()


def test_the_time_limit_applies_to_agent_statements():
    e = SqlEnv("spider-dev", backend="sqlite", limits=SqlLimits(timeout=0.5))
    try:
        e.reset(options={"task": 0})
        obs, _, terminated, _, info = e.step(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c")
        assert info["timed_out"] and "interrupted" in obs and not terminated
        assert e.step("SELECT 1")[0] == "[(1,)]"
    finally:
        e.close()



def test_a_gold_that_fails_on_its_own_keeps_the_environment(tmp_path):
    """A gold the engine refuses is an error of its episode (never a reward), but the
    environment is sound: the runner keeps it for the next task instead of building a
    new one (a server backend loads every database again then, a second or more)."""
    import json
    import shutil

    from intercode.agents.base import Action, Policy
    from intercode.errors import GoldError
    from intercode.runner.episode import needs_new_env, run_episode

    shutil.copy(EXAMPLE_SQL / "shop.sql", tmp_path / "shop.sql")
    rows = [{"query": "q", "gold": "SELECT no_such_column FROM customer",
             "database": "shop.sql"},
            {"query": "q", "gold": "SELECT name FROM customer", "database": "shop.sql"}]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    class Submits(Policy):
        name = "submits"

        def reset(self, task) -> None:
            self.done = False

        def act(self, observation: str, reward: float | None = None) -> Action | None:
            if self.done:
                return None
            self.done = True
            return Action("SELECT 1")

    e = SqlEnv(str(tmp_path / "tasks.jsonl"))
    try:
        broken = run_episode(e, 0, Submits())
        assert broken.status == "error" and broken.reward is None
        assert broken.error.startswith(f"{GoldError.__name__}:"), broken.error
        assert not needs_new_env(broken)
        fine = run_episode(e, 1, Submits())
        assert fine.status == "ok" and fine.reward is not None
    finally:
        e.close()
