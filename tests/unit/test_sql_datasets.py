"""WikiSQL's golds as SQL, BIRD's tasks and its dump's download, and the execution
accuracy of both (hand-made cases worked as WikiSQL's and BIRD's evaluators work)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from bird_helpers import TASKS, bird_dump, bird_upstream

from intercode.datafiles import FILES
from intercode.datasets.registry import dataset_names, load_dataset
from intercode.datasets.spider import SqlTask
from intercode.datasets.wikisql_gold import parse_gold, to_sql
from intercode.errors import DatasetError, DataUnavailable
from intercode.fetch import blob_id, data_file
from intercode.rewards.execution import bird_ex, execution_reward, wikisql_ex
from intercode.rewards.sql import result_eq
from intercode.sql.mysqldump import Column, Table, parse_dump
from intercode.sql.store import dump_store

SHARED = Path(os.environ.get("INTERCODE_DATA_MIRROR", "/nonexistent"))
pytestmark = pytest.mark.usefixtures("fresh_caches")


def _tables() -> dict[str, Table]:
    cols = [Column("id_fake", "int", False), Column("School/Club_Team", "text", True),
            Column("No.", "text", True), Column("Total", "double", True),
            Column("Name", "text", True)]
    return {"table_1_2": Table("table_1_2", cols)}


# ---------------------------------------------------------------- WikiSQL's golds


@pytest.mark.parametrize(("gold", "sql"), [
    ("SELECT COUNT School/Club_Team FROM table_1_2 WHERE No. = 3",
     "SELECT COUNT(`School/Club_Team`) FROM `table_1_2` WHERE `No.` = '3'"),
    ("SELECT School/Club_Team FROM table_1_2",
     "SELECT `School/Club_Team` FROM `table_1_2`"),
    # a real column: WikiSQL's parse_decimal (',' groups digits), else the first number
    ("SELECT MAX Total FROM table_1_2 WHERE Total < 1,928 AND Total > 7 (1.89%)",
     "SELECT MAX(`Total`) FROM `table_1_2` WHERE `Total` < 1928.0 AND `Total` > 7.0"),
    # a value with " AND " in it that is not followed by a column and an operator
    ("SELECT AVG Total FROM table_1_2 WHERE Name = Karen AND Don AND No. = 4",
     "SELECT AVG(`Total`) FROM `table_1_2` WHERE `Name` = 'Karen AND Don' AND `No.` = '4'"),
    # quotes doubled; the dump's text lost its non-ASCII characters, so does the value
    ("SELECT MIN No. FROM table_1_2 WHERE Name = \"Don't Stop\" 3–2",
     "SELECT MIN(`No.`) FROM `table_1_2` WHERE `Name` = '\"Don''t Stop\" 32'"),
])
def test_wikisql_gold_translation(gold: str, sql: str) -> None:
    assert to_sql(parse_gold(gold, _tables()), _tables()) == sql


@pytest.mark.parametrize(("gold", "error"), [
    ("SELECT Position FROM table_1_2 WHERE Name = x", "no column 'Position'"),
    ("SELECT Name FROM table_9 WHERE Name = x", "lacks: 'table_9'"),
    ("SELECT Name FROM table_1_2 WHERE Nope = x", "cannot read the condition"),
    ("DROP TABLE table_1_2", "not a WikiSQL logical form"),
    ("SELECT Name FROM table_1_2 WHERE Total = none", "no number"),
    ("SELECT Name FROM table_1_2 WHERE Name = a\\' OR 1=1 -- ", "backslash"),
])
def test_wikisql_gold_that_cannot_be_translated(gold: str, error: str) -> None:
    with pytest.raises(DatasetError, match=error):
        to_sql(parse_gold(gold, _tables()), _tables())


def test_wikisql_dev_loads_every_gold_as_sql() -> None:
    ds = load_dataset("wikisql-dev")
    raw = json.loads((SHARED / FILES["wikisql_dev"].mirror).read_text(encoding="utf-8"))
    assert len(ds) == len(raw) == 196 and ds.env == "sql"
    assert all(isinstance(t, SqlTask) and t.dump == "wikisql_dbs" and t.metric == "wikisql"
               and t.db == "dev" for t in ds)
    assert [t.query for t in ds] == [r["query"] for r in raw]
    assert ds[1].gold == ("SELECT COUNT(`School/Club_Team`) FROM `table_1_10015132_11` "
                          "WHERE `No.` = '3'")
    assert "wikisql-dev" in dataset_names("sql")


def test_wikisql_dump_reads_double_quoted_strings() -> None:
    """mysqldump writes '...', InterCode's transform.py "..." around a value with a quote."""
    tables = parse_dump(data_file("wikisql_dbs").read_text(encoding="utf-8"))["dev"].tables
    assert (4, "Mark Jackson", "13", "United States", "Guard", "2000-01",
            "St. John's") in tables["table_1_10015132_9"].rows
    assert sum(len(t.rows) for t in tables.values()) == 835


# ---------------------------------------------------------------- execution accuracy


def test_wikisql_execution_accuracy_is_list_equality() -> None:
    """WikiSQL's evaluate.py: ``pred == gold`` of the lists of values."""
    gold = [("a",), ("b",), ("b",)]
    assert wikisql_ex([("a",), ("b",), ("b",)], gold)
    assert wikisql_ex([(3,)], [(3.0,)])  # 3 == 3.0, as in Python
    assert not wikisql_ex([("b",), ("a",), ("b",)], gold)  # order counts
    assert not wikisql_ex([("a",), ("b",)], gold)  # and duplicates
    assert not wikisql_ex([("a", 1), ("b", 1), ("b", 1)], gold)  # one column
    assert wikisql_ex([], [])


def test_bird_execution_accuracy_compares_sets() -> None:
    """BIRD's evaluation.py: ``set(predicted_res) == set(ground_truth_res)``."""
    gold = [("TR001", "cl"), ("TR001", "c")]
    assert bird_ex([("TR001", "c"), ("TR001", "cl")], gold)  # any order
    assert bird_ex([("TR001", "c"), ("TR001", "cl"), ("TR001", "c")], gold)  # duplicates
    assert not bird_ex([("cl", "TR001"), ("c", "TR001")], gold)  # columns in order
    assert not bird_ex([("TR001", "cl")], gold)
    assert bird_ex([(None,)], [(None,)]) and bird_ex([], [])
    # where Spider's exec_match says otherwise: duplicates count, columns may permute
    assert not result_eq(gold, [("TR001", "c"), ("TR001", "cl"), ("TR001", "c")], False)
    assert result_eq(gold, [("cl", "TR001"), ("c", "TR001")], False)


def test_execution_reward_keeps_intercode_reward_beside_it() -> None:
    reward, intercode = execution_reward("bird", [(2,), (1,), (1,)], [(1,), (2,)], "SELECT")
    assert (reward.reward, reward.success) == (1.0, True) and intercode < 1.0
    reward, _ = execution_reward("wikisql", None, [(1,)], "SELECT")  # an error scores 0
    assert reward.reward == 0.0 and not reward.success


# ---------------------------------------------------------------- BIRD


def test_bird_tasks_show_evidence_and_difficulty(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with bird_upstream(tmp_path, monkeypatch):
        shown, hidden = load_dataset("bird-dev"), load_dataset("bird-dev-no-evidence")
    assert len(shown) == len(hidden) == len(TASKS)
    first = shown[0]
    assert isinstance(first, SqlTask)
    assert first.query == (TASKS[0]["query"] + "\nExternal knowledge: "
                           + TASKS[0]["evidence"])
    assert hidden[0].query == TASKS[0]["query"]
    assert shown[1].query == TASKS[1]["query"]  # no evidence: the question alone
    assert [t.category for t in shown] == ["simple", "moderate", "challenging"]
    assert all(isinstance(t, SqlTask) and (t.dump, t.metric, t.source) ==
               ("bird_dbs", "bird", "bird-dev") for t in (*shown, *hidden))


def test_the_real_bird_task_file() -> None:
    ds = load_dataset("bird-dev")
    assert len(ds) == 338
    assert {t.category for t in ds} == {"simple", "moderate", "challenging"}
    assert {t.db for t in ds if isinstance(t, SqlTask)} == {
        "debit_card_specializing", "superhero", "toxicology"}
    assert FILES["bird_dbs"].blob == "a968c44e546358ed6f5eb8ee8fdd6827e6e3d18f"


def test_bird_dump_downloads_and_is_verified_by_blob_id(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with bird_upstream(tmp_path, monkeypatch) as up:
        store = dump_store("bird_dbs")
        assert set(store.databases) == {"toxicology", "superhero"}
        assert up.requests == ["/" + FILES["bird_dbs"].upstream]
        path = data_file("bird_dbs")  # from the cache now, checked again
        assert blob_id(path.read_bytes()) == blob_id(bird_dump())
        assert len(up.requests) == 1


@pytest.mark.parametrize("body", ["wrong", "truncated", "longer"])
def test_bird_dump_with_other_content_is_refused(body: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    dump = bird_dump()
    with bird_upstream(tmp_path, monkeypatch) as up:
        up.body = {"wrong": dump.replace(b"TR001", b"TR00X"), "truncated": dump[:-40],
                   "longer": dump + b"DROP DATABASE toxicology;\n"}[body]
        with pytest.raises(DatasetError, match="does not have the pinned content"):
            data_file("bird_dbs")
        assert not (tmp_path / "cache").exists() or not list(
            (tmp_path / "cache").rglob("ic_bird_dbs.sql"))


def test_the_real_pin_refuses_another_file(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The served file is not the one whose blob id the pinned commit's tree names."""
    with bird_upstream(tmp_path, monkeypatch, pin=FILES["bird_dbs"].blob), \
            pytest.raises(DatasetError, match="blob:a968c44e"):
        data_file("bird_dbs")


def test_bird_dump_missing_from_the_mirror_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.setenv("INTERCODE_DATA_MIRROR", str(SHARED))
    monkeypatch.setenv("INTERCODE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataUnavailable) as info:
        data_file("bird_dbs")
    assert "\n" not in str(info.value) and "ic_bird_dbs.sql" in str(info.value)
