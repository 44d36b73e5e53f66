"""Attacks on the SQL engine's kept copies: a copy of a database that only ran read-only
statements is kept for the next episode on that database (``inbox/sqlrepl.Engine.kept``).
Whatever an episode does, the next one must find its database pristine, as a new copy
would be: the data, the schema, the temporary schema, an open transaction or savepoint,
the change counters, attached databases.

The engine runs in-process here (as in ``test_sql_engine_snapshots``); the last test goes
through the real sandboxed engine.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sql_engine_helpers import NEEDS_SERIALIZE, image

from intercode.sandbox.inbox import sqlrepl
from intercode.sql.backend import SqlLimits
from intercode.sql.sqlite_backend import SqliteBackend

pytestmark = NEEDS_SERIALIZE


@pytest.fixture
def engine() -> sqlrepl.Engine:
    return sqlrepl.Engine({
        "a": image("CREATE TABLE t(x)", "INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)",
                   "CREATE INDEX tx ON t(x)"),
        "b": image("CREATE TABLE u(y)", "INSERT INTO u VALUES ('b')")})


def ask(engine: sqlrepl.Engine, sql: str, db: str = "a", kind: str = "query",
        **extra: Any) -> dict[str, Any]:
    request = {"db": db, "sql": sql, "timeout": 10.0, "max_rows": 100, "max_chars": 10000,
               **extra}
    reply = engine.answer(kind, json.dumps(request).encode())  # (errors are replies)
    engine.idle()
    return reply


def reset(engine: sqlrepl.Engine, db: str = "a") -> None:
    assert engine.handle("reset", {"db": db}) == {}
    engine.idle()


PRISTINE = [
    ("SELECT name FROM pragma_database_list ORDER BY name", [["main"]]),  # no temp yet
    ("SELECT x FROM t ORDER BY x", [[1], [2]]),
    ("SELECT name FROM sqlite_master ORDER BY name", [["t"], ["tx"]]),
    ("SELECT name FROM temp.sqlite_master", []),
    ("SELECT changes(), total_changes(), last_insert_rowid()", [[0, 0, 0]]),
    ("SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlite_stat%'", [[0]]),
]


def assert_pristine(engine: sqlrepl.Engine) -> None:
    for sql, rows in PRISTINE:
        reply = ask(engine, sql)
        assert reply.get("r") == rows, (sql, reply)
    # no transaction left open: BEGIN works (a new copy would let it), then undo it
    assert "e" not in ask(engine, "BEGIN"), "a transaction was left open"
    ask(engine, "ROLLBACK")


WRITES = [
    ["INSERT INTO t VALUES (3)"],
    ["UPDATE t SET x = x + 10"],
    ["DELETE FROM t"],
    ["CREATE TABLE z(q)"],
    ["DROP INDEX tx"],
    ["CREATE TEMP TABLE tt(q)", "INSERT INTO tt VALUES (1)"],
    ["CREATE TEMP VIEW tv AS SELECT 1"],
    ["CREATE TEMP TRIGGER tg AFTER INSERT ON t BEGIN SELECT 1; END"],
    ["BEGIN"],  # left open
    ["BEGIN", "INSERT INTO t VALUES (9)"],
    ["SAVEPOINT s1"],
    ["ANALYZE"],  # refused, but it asked to write
    ["REINDEX"],  # needs no authorizer call at all
    ["VACUUM"],
    ["ATTACH ':memory:' AS side"],
    ["PRAGMA user_version = 7"],
    ["CREATE VIRTUAL TABLE f USING fts4(body)"],
    ["INSERT INTO t SELECT x FROM t", "SELECT 1"],  # a read after a write
    ["SELECT * FROM temp.sqlite_master"],  # creates the temp schema
    ["SELECT * FROM sqlite_temp_master"],
    ["SELECT * FROM pragma_index_list('t')"],  # (a table-valued pragma counts, to be safe)
    ["PRAGMA index_list(sqlite_temp_master)"],  # opens temp with no temp in its call
    ["PRAGMA INDEX_LIST(SQLITE_TEMP_SCHEMA)"],
]


@pytest.mark.parametrize("statements", WRITES, ids=lambda s: s[0][:24])
def test_a_copy_that_was_asked_to_write_is_never_kept(engine: sqlrepl.Engine,
                                                      statements: list[str]) -> None:
    reset(engine)
    first = engine.conns["a"]
    for sql in statements:
        ask(engine, sql)
    reset(engine)
    assert engine.conns["a"] is not first, "a written copy came back"
    assert "a" not in engine.kept
    assert_pristine(engine)


READS = ("SELECT * FROM t", "SELECT count(*) FROM t WHERE x > 1",
         "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 5) "
         "SELECT * FROM c", "PRAGMA table_info(t)",
         "EXPLAIN QUERY PLAN SELECT * FROM t WHERE x = 1", "SELECT upper('q'), random()",
         "SELECT * FROM t", "SELECT * FROM t")  # (the same statement again)


def test_a_copy_that_only_read_is_kept_and_is_as_new(engine: sqlrepl.Engine) -> None:
    reset(engine)
    first = engine.conns["a"]
    for _ in range(2):
        for sql in READS:
            assert "e" not in ask(engine, sql), sql
        reset(engine)
        assert engine.conns["a"] is first  # kept
    assert_pristine(engine)
    reset(engine)  # (the check touched the temp schema: a new copy now)
    assert engine.conns["a"] is not first


def test_a_statement_that_fails_still_judges_its_copy(engine: sqlrepl.Engine) -> None:
    reset(engine)
    first = engine.conns["a"]
    assert "e" in ask(engine, "INSERT INTO t VALUES (1, 2)")  # wrong column count
    reset(engine)
    assert engine.conns["a"] is not first
    assert_pristine(engine)


def test_attached_databases_and_host_commands_count(engine: sqlrepl.Engine) -> None:
    reset(engine)
    first = engine.conns["a"]
    assert ask(engine, "SELECT y FROM b.u", attach=["b"]).get("r") == [["b"]]
    reset(engine)
    assert engine.conns["a"] is not first  # b was attached to it
    second = engine.conns["a"]
    ask(engine, "INSERT INTO t VALUES (?)", kind="exec", params=[5])
    reset(engine)
    assert engine.conns["a"] is not second
    assert_pristine(engine)


def test_a_restore_and_snapshots_do_not_bring_written_copies_back(engine: sqlrepl.Engine
                                                                  ) -> None:
    reset(engine)
    ask(engine, "INSERT INTO t VALUES (3)")
    assert engine.handle("snap", {"id": 1}) == {}
    assert engine.handle("restore", {"id": 1}) == {}
    engine.idle()
    assert ask(engine, "SELECT count(*) FROM t")["r"] == [[3]]  # the restored copy
    reset(engine)
    assert "a" not in engine.kept  # neither the written copy nor the restored one
    assert_pristine(engine)


def test_the_next_episode_on_another_database_does_not_see_the_kept_one(
        engine: sqlrepl.Engine) -> None:
    reset(engine)
    ask(engine, "SELECT * FROM t")
    reset(engine, "b")
    assert "a" in engine.kept and list(engine.conns) == ["b"]
    reply = ask(engine, "SELECT * FROM t", db="b")
    assert "no such table" in reply.get("e", "")
    assert ask(engine, "SELECT name FROM pragma_database_list", db="b")["r"] == [["main"]]


def test_the_reset_a_request_carries_is_done_first(engine: sqlrepl.Engine) -> None:
    reset(engine)
    ask(engine, "DELETE FROM t")
    reply = ask(engine, "SELECT count(*) FROM t", reset="a")  # (the host's lazy reset)
    assert reply["r"] == [[2]] and engine.current == "a"


def test_through_the_sandboxed_engine() -> None:
    # the real engine, episode after episode on one database: a read-only episode, then a
    # writing one, then read-only ones again; each starts pristine
    backend = SqliteBackend(SqlLimits(timeout=5.0))
    session = backend.session()
    try:
        counts = []
        for actions in (["SELECT count(*) FROM city"],
                        ["DELETE FROM city WHERE ID < 100", "CREATE TEMP TABLE k(v)"],
                        ["BEGIN", "DELETE FROM city"],
                        ["SELECT count(*) FROM city"], []):
            session.reset("world_1")
            result = session.execute("SELECT count(*) FROM city")
            assert result.ok, result.error
            counts.append(result.rows[0][0])
            temp = session.execute("SELECT count(*) FROM temp.sqlite_master")
            assert temp.ok and temp.rows == [(0,)]
            for sql in actions:
                session.execute(sql)
        assert counts == [4079] * 5
    finally:
        session.close()
        backend.close()


def test_the_most_recently_used_copies_are_kept_within_the_budget(
        engine: sqlrepl.Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    engine.images["c"] = image("CREATE TABLE v(z)")
    sizes = {name: len(data) for name, data in engine.images.items()}
    monkeypatch.setattr(sqlrepl, "KEEP_BYTES", sizes["a"] + sizes["b"] + 1)
    for db in ("a", "b", "c", "b"):  # read-only episodes; then one more starts on a
        reset(engine, db)
        ask(engine, "SELECT 1", db=db)
    reset(engine, "a")
    assert "a" not in engine.kept and set(engine.kept) == {"b", "c"}  # a went: the oldest
    assert list(engine.kept) == ["b", "c"]  # b used last


def test_a_reset_is_not_lost_with_a_request_that_failed_to_go() -> None:
    # the reset travels with the episode's first request: if that request raises before
    # it reaches the engine, the next one must still carry it
    from intercode.errors import SandboxError

    backend = SqliteBackend(SqlLimits(timeout=5.0))
    session = backend.session()
    try:
        session.reset("world_1")
        assert session.execute("DELETE FROM city").ok
        session.reset("world_1")
        box = session._sandbox()
        real = box.run

        def fails_once(*args: Any, **kwargs: Any) -> Any:
            box.run = real  # type: ignore[method-assign]
            raise SandboxError("the request did not go")

        box.run = fails_once  # type: ignore[method-assign]
        with pytest.raises(SandboxError):
            session.execute("SELECT count(*) FROM city")
        result = session.execute("SELECT count(*) FROM city")
        assert result.ok and result.rows == [(4079,)]
    finally:
        session.close()
        backend.close()
