"""The SQL engine's snapshots (``inbox/sqlrepl.Engine``, run in-process): a restore opens
its databases on first use, and a snapshot taken before that use is still exact."""

from __future__ import annotations

from typing import Any

import pytest
from sql_engine_helpers import NEEDS_SERIALIZE, image

from intercode.sandbox.inbox import sqlrepl

pytestmark = NEEDS_SERIALIZE


@pytest.fixture
def engine() -> sqlrepl.Engine:
    return sqlrepl.Engine({"a": image("CREATE TABLE t(x)", "INSERT INTO t VALUES (1)"),
                           "b": image("CREATE TABLE u(y)")})


def ask(engine: sqlrepl.Engine, sql: str, db: str = "a", kind: str = "query") -> Any:
    reply = engine.handle(kind, {"db": db, "sql": sql, "timeout": 10.0, "max_rows": 100,
                                 "max_chars": 10000})
    engine.idle()
    return reply.get("r", reply)


def state(engine: sqlrepl.Engine) -> tuple[Any, ...]:
    return (ask(engine, "SELECT x FROM t ORDER BY x"), ask(engine, "SELECT y FROM u", "b"),
            ask(engine, "SELECT b FROM temp.tt"), engine.current)


def snap(engine: sqlrepl.Engine, kind: str, ident: int) -> None:
    assert engine.handle(kind, {"id": ident}) == {}
    engine.idle()


def test_a_snapshot_of_a_restore_not_used_yet_is_exact(engine: sqlrepl.Engine) -> None:
    ask(engine, "INSERT INTO u VALUES (7)", "b")
    ask(engine, "INSERT INTO t VALUES (2)")
    ask(engine, "CREATE TEMP TABLE tt(b)")
    ask(engine, "INSERT INTO tt VALUES (x'00ff')")
    want = state(engine)
    snap(engine, "snap", 1)
    ask(engine, "DELETE FROM t")
    ask(engine, "DROP TABLE tt")
    ask(engine, "DELETE FROM u", "b")
    snap(engine, "restore", 1)
    assert engine.conns == {}  # nothing opened by the restore itself
    snap(engine, "snap", 2)  # before any use: shares snapshot 1's capture
    snap(engine, "drop", 1)
    assert state(engine) == want
    ask(engine, "INSERT INTO t VALUES (3)")
    ask(engine, "INSERT INTO u VALUES (8)", "b")
    snap(engine, "restore", 2)
    assert state(engine) == want
    snap(engine, "restore", 2)  # survives restores: the opened copies are new ones
    assert state(engine) == want


def test_a_database_the_snapshot_did_not_use_is_pristine_after_a_restore(
        engine: sqlrepl.Engine) -> None:
    snap(engine, "snap", 1)  # "b" not opened yet
    ask(engine, "INSERT INTO u VALUES (9)", "b")
    ask(engine, "INSERT INTO t VALUES (2)")
    snap(engine, "restore", 1)
    assert ask(engine, "SELECT y FROM u", "b") == []
    assert ask(engine, "SELECT x FROM t") == [[1]]


def test_a_reset_forgets_a_restore_not_used_yet(engine: sqlrepl.Engine) -> None:
    ask(engine, "INSERT INTO t VALUES (2)")
    snap(engine, "snap", 1)
    snap(engine, "restore", 1)
    assert engine.handle("reset", {"db": "a"}) == {}
    engine.idle()
    assert ask(engine, "SELECT x FROM t") == [[1]]
    with pytest.raises(KeyError):  # the reset dropped the snapshots too
        engine.handle("restore", {"id": 1})
