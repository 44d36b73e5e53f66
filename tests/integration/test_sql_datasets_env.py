"""WikiSQL and BIRD in the SQL environment: each dataset's own databases, its execution
accuracy as the reward, on both backends (BIRD on a small database the tests dump)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bird_helpers import bird_upstream

from intercode.datasets import Dataset, load_dataset
from intercode.envs.core.sql import dataset_store
from intercode.envs.sql import SqlEnv
from intercode.errors import DatasetError


def _env(dataset: str | Dataset, backend: str, request: pytest.FixtureRequest) -> SqlEnv:
    url = request.getfixturevalue("mysql_url") if backend == "mysql" else None
    return SqlEnv(dataset, backend=backend, mysql_url=url)


def _score(env: SqlEnv, index: int, *actions: str) -> tuple[float, dict]:
    env.reset(options={"task": index})
    for action in actions:
        env.step(action)
    _, reward, _, _, info = env.step("submit")
    return reward, info


@pytest.mark.parametrize("backend", ["sqlite", "mysql"])
def test_bird_on_its_own_databases(backend: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch,
                                   request: pytest.FixtureRequest) -> None:
    with bird_upstream(tmp_path, monkeypatch):
        env = _env("bird-dev", backend, request)
        try:
            _, info = env.reset(options={"task": 1})
            assert info["database"] == "toxicology" and info["hardness"] == "moderate"
            # BIRD's EX: the same distinct rows in any order
            reward, info = _score(env, 1, "SELECT element FROM atom WHERE molecule_id = "
                                          "'TR001' UNION ALL SELECT 'c' ORDER BY 1")
            assert reward == 1.0 and info["reward_metric"] == "bird_ex"
            assert info["exec_match"] is False  # Spider's: duplicates count
            reward, _ = _score(env, 1, "SELECT element FROM atom")
            assert reward == 0.0
            reward, _ = _score(env, 2, "SELECT superhero_name FROM superhero WHERE "
                                       "height_cm > 190 ORDER BY id DESC")
            assert reward == 1.0
            reward, _ = _score(env, 0, env.dataset[0].gold)
            assert reward == 1.0
            env.reset(options={"task": 0})
            names = env.step("SHOW DATABASES")[0]
            assert "superhero" in names and "world_1" not in names  # not Spider's
        finally:
            env.close()


@pytest.mark.parametrize("backend", ["sqlite", "mysql"])
def test_wikisql_reward_is_its_execution_accuracy(backend: str,
                                                  request: pytest.FixtureRequest) -> None:
    env = _env("wikisql-dev", backend, request)
    try:
        # task 4: Player WHERE Position = Guard AND Years_in_Toronto = 1996-97
        reward, info = _score(env, 4, "SELECT Player FROM table_1_10015132_11 WHERE "
                                      "Position = 'guard' AND Years_in_Toronto = '1996-97'")
        assert reward == 1.0 and info["reward_metric"] == "wikisql_ex"
        reward, _ = _score(env, 1, "SELECT COUNT(*) FROM table_1_10015132_11 WHERE `No.` = 3")
        assert reward == 1.0
        # two values where the gold has one: InterCode's reward would give part of it
        reward, info = _score(env, 3, "SELECT Player FROM table_1_10015132_11 WHERE "
                                      "`No.` IN ('42', '21')")
        assert reward == 0.0 and info["reward_parts"]["iou"] == 0.5
    finally:
        env.close()


def test_a_dataset_of_two_dumps_is_refused() -> None:
    spider, wikisql = load_dataset("spider-dev"), load_dataset("wikisql-dev")
    mixed = Dataset("mixed", "sql", (spider[0], wikisql[0]), "x")
    with pytest.raises(DatasetError, match="several sources"):
        dataset_store(mixed)
