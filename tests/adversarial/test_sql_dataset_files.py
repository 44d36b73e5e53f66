"""Hostile SQL dataset files: a BIRD dump or task file that is not what it should be, a
dump statement that reaches past its own database, a WikiSQL value that is not SQL."""

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path

import pytest
from bird_helpers import TASKS, bird_dump, bird_upstream

from intercode.datasets.registry import load_dataset
from intercode.datasets.wikisql_gold import parse_gold, to_sql
from intercode.envs.sql import SqlEnv
from intercode.errors import DatasetError
from intercode.fetch import data_file
from intercode.sql.mysql_backend import parse_url
from intercode.sql.mysqldump import Column, Table


def test_a_dump_statement_that_reaches_past_its_database_is_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mysql_url: str) -> None:
    """A dump whose database section drops another database (the templates load as the
    server account that owns every run's databases): refused, nothing dropped."""
    import pymysql

    canary = f"ic_canary_{secrets.token_hex(4)}"
    admin = pymysql.connect(**parse_url(mysql_url), autocommit=True)
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{canary}`")
        hostile = bird_dump() + f"DROP DATABASE `{canary}`;\n".encode()
        with bird_upstream(tmp_path, monkeypatch, dump=hostile), \
                pytest.raises(DatasetError, match="not run: 'DROP DATABASE"):
            env = SqlEnv("bird-dev", backend="mysql", mysql_url=mysql_url)
            try:
                env.reset(options={"task": 0})
            finally:
                env.close()
        with admin.cursor() as cur:
            assert cur.execute("SHOW DATABASES LIKE %s", (canary,)) == 1
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{canary}`")
        admin.close()


@pytest.mark.parametrize("body", ["wrong", "truncated", "appended"])
def test_a_bird_dump_of_other_content_is_refused(body: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    dump = bird_dump()
    with bird_upstream(tmp_path, monkeypatch) as up:
        up.body = {"wrong": dump.replace(b"'cl'", b"'xx'"), "truncated": dump[:len(dump) // 2],
                   "appended": dump + b"DROP TABLE `atom`;\n"}[body]
        with pytest.raises(DatasetError, match="pinned content"):
            data_file("bird_dbs")


@pytest.mark.parametrize(("tasks", "error"), [
    (b"{\"not\": \"a list\"}", "expected a JSON list"),
    (json.dumps([1]).encode(), "task 0 is not an object"),
    (json.dumps([{**TASKS[0], "gold": ["DROP TABLE atom"]}]).encode(), "no 'gold' string"),
    (json.dumps([{**TASKS[0], "evidence": {"x": 1}}]).encode(), "'evidence' is not a string"),
    (json.dumps([{**TASKS[0], "difficulty": ""}]).encode(), "no 'difficulty' string"),
    (b"\xff\xfe[", "cannot read JSON"),
])
def test_a_hostile_bird_task_file_is_a_one_line_error(tasks: bytes, error: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with bird_upstream(tmp_path, monkeypatch, tasks=tasks), \
            pytest.raises(DatasetError, match=error) as info:
        load_dataset("bird-dev")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", ["x' OR '1'='1", "x'; DROP TABLE t; --", "x` = `Name"])
def test_a_wikisql_value_stays_one_string_literal(value: str) -> None:
    table = Table("t", [Column("id_fake", "int", False), Column("Name", "text", True)],
                  rows=[(1, "a"), (2, "b")])
    sql = to_sql(parse_gold(f"SELECT COUNT Name FROM t WHERE Name = {value}", {"t": table}),
                 {"t": table})
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id_fake INTEGER, Name TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", table.rows)
    conn.execute("INSERT INTO t VALUES (3, ?)", (value,))
    assert conn.execute(sql).fetchall() == [(1,)]  # the row holding the value, only
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (3,)
