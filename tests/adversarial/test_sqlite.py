"""Attacks on the SQLite backend: agent SQL must never run in (or reach) the host process.

Covered here: fts3_tokenizer (it leaked a host address and segfaulted the host), unbounded
results and the 10 MB error echo.
"""

from __future__ import annotations

import dataclasses
import os
import re
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from intercode.envs.sql import SqlEnv
from intercode.errors import RewardError
from intercode.sandbox.inbox import sqlconn
from intercode.sql.backend import SqlLimits
from intercode.sql.sqlite_backend import SqliteBackend
from intercode.sql.sqlite_sandboxed import parse_reply, to_result

SRC = Path(__file__).resolve().parents[2] / "src"
OBSERVATION_LIMIT = 16 * 1024 * 1024
HUGE_ROWS = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1500) "
             "SELECT x, {value} FROM c")


@pytest.fixture(scope="module")
def backend():
    return SqliteBackend(SqlLimits(timeout=1.0))


@pytest.fixture()
def session(backend):
    s = backend.session()
    s.reset("world_1")
    yield s
    s.close()


@pytest.fixture(scope="module")
def env():
    e = SqlEnv("spider-dev", backend="sqlite", limits=SqlLimits(timeout=2.0))
    yield e
    e.close()


def count(session, table="city"):
    result = session.execute(f"SELECT count(*) FROM {table}")
    assert result.ok, result.error
    return result.rows[0][0]


def engine_pid(session) -> int:
    """Host pid of the session's engine process (inside its sandbox)."""
    box = session._box
    inner, bwrap = box._io.shell_pid, box._proc.pid
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{name}/status").read_text()
        except OSError:
            continue
        nspid = re.search(r"^NSpid:\s+(.*)$", status, re.M).group(1).split()
        if int(nspid[-1]) == inner and len(nspid) > 1 and _descends(int(name), bwrap):
            return int(name)
    raise AssertionError("engine process not found")


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat[stat.rfind(")") + 2:].split()[1])
    return False


# -- fts3_tokenizer ---------------------------------------------------------------------------


def test_fts3_tokenizer_does_not_leak_an_address(session):
    result = session.execute("SELECT hex(fts3_tokenizer('simple'))")
    assert not result.ok and "not authorized" in result.error
    assert not re.search(r"[0-9A-F]{12}", result.render(5))


def test_fts3_tokenizer_pointer_attack_leaves_the_host_running():
    script = textwrap.dedent("""
        from intercode.sql.sqlite_backend import SqliteBackend
        s = SqliteBackend().session()
        s.reset("world_1")
        for sql in ["SELECT fts3_tokenizer('evil', x'4141414141414141')",
                    "CREATE VIRTUAL TABLE boom USING fts3(x, tokenize=evil)",
                    "INSERT INTO boom VALUES ('a b c')"]:
            print(s.execute(sql).render(5))
        print("rows", s.execute("SELECT count(*) FROM city").rows)
        s.close()
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert all(line.startswith("Error executing query:") for line in lines[:3]), lines
    assert lines[-1] == "rows [(4079,)]"


def test_the_hardened_connection_refuses_without_its_authorizer_too():
    conn = sqlconn.open_image(SqliteBackend().store.images["world_1"], None, lambda: "world_1")
    assert sqlconn.harden(conn)  # defensive mode, FTS3 tokenizer interface off
    conn.set_authorizer(None)
    for sql in ("SELECT fts3_tokenizer('simple')",
                "SELECT fts3_tokenizer('evil', x'4141414141414141')"):
        with pytest.raises(Exception, match="user-defined function raised exception"):
            conn.execute(sql).fetchall()
    conn.set_authorizer(sqlconn.authorize)
    conn.execute("CREATE VIRTUAL TABLE f USING fts4(x)")
    with pytest.raises(Exception, match="may not be modified"):  # shadow tables: defensive
        conn.execute("INSERT INTO f_content VALUES (1, 'x')")
    for module in ("dbstat", "fts3tokenize", "fts4aux"):
        with pytest.raises(Exception, match="not authorized"):
            conn.execute(f"CREATE VIRTUAL TABLE v_{module} USING {module}(f)")
    conn.close()


def test_agent_sql_runs_outside_the_host_process(session):
    before = resource.getrusage(resource.RUSAGE_SELF)
    result = session.execute("SELECT count(*) FROM city a, city b, city c")  # ~1 s of CPU
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert result.timed_out
    assert (after.ru_utime - before.ru_utime) < 0.5


# -- the engine dies, hangs, or lies ----------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_a_crashed_engine_is_replaced_and_the_episode_goes_on(session, sig):
    session.execute("DELETE FROM city")
    os.kill(engine_pid(session), sig)
    time.sleep(0.2)
    result = session.execute("SELECT count(*) FROM city")
    assert result.ok and result.rows == [(4079,)]  # a fresh engine: a pristine copy
    assert "SQL engine had stopped" in result.render(5)
    assert count(session, "country") == 239


def test_a_hung_engine_is_killed_at_the_deadline(session):
    box = session._sandbox()
    # a request that announces more bytes than it sends: the engine waits for ever
    os.write(box._io.action_w, b"999 100000000 query\n")
    result = session.execute("SELECT 1")
    assert not result.ok and result.timed_out and "restarted" in result.error
    assert count(session) == 4079


def test_a_runaway_query_is_interrupted_and_the_next_step_works(session):
    session.execute("CREATE TABLE mine (x)")
    result = session.execute(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c")
    assert result.timed_out and not result.ok
    assert session.execute("SELECT count(*) FROM mine").rows == [(0,)]  # state kept


@pytest.mark.parametrize("text", [
    "", "not json", "[]", "null", '{"c": ["a"], "r": [[true]]}', '{"c": ["a"], "r": [[[1]]]}',
    '{"c": ["a"], "r": [[{"x": "zz"}]]}', '{"c": ["a"], "r": [[{"y": "00"}]]}',
    '{"c": ["a"], "r": [1]}', '{"c": [1], "r": []}', '{"r": []}', '{"e": 5}', '{"n": "5"}',
    '{"c": ["a"], "r": [[' + "9" * 5000 + "]]}", "[" * 100000 + "]" * 100000,
])
def test_forged_replies_are_refused(text):
    assert parse_reply(text) is None


def test_well_formed_replies_keep_their_types():
    reply = parse_reply('{"c": ["a", "b", "c", "d", "e"], "r": [[1, 1.5, "s", null, '
                        '{"x": "00ff"}]], "cut": ""}')
    assert to_result(reply, 1.0).rows == [(1, 1.5, "s", None, b"\x00\xff")]


def test_a_garbled_reply_is_an_observation_and_the_session_recovers(session, monkeypatch):
    box = session._sandbox()
    real = box.run

    def garble(action, timeout=None, kind=None):
        result = real(action, timeout, kind)
        assert result.reply is not None
        return type(result)(output="", reply=result.reply[:-5] + "\x00junk", exit_code=0)

    monkeypatch.setattr(box, "run", garble)
    result = session.execute("SELECT 1")
    monkeypatch.undo()
    assert not result.ok and "malformed reply" in result.error
    assert count(session) == 4079


# -- unbounded results; the 10 MB error echo --------------------------------------------------


@pytest.mark.parametrize("value", ["hex(randomblob(500000))", "randomblob(1000000)",
                                   "char(1) || hex(randomblob(300000))"])
def test_huge_results_are_bounded(env, value):
    env.reset(options={"task": 0})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    obs, _, _, _, info = env.step(HUGE_ROWS.format(value=value))
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert len(obs) < OBSERVATION_LIMIT and info["rows"] < 1500
    assert "[intercode] the result was cut" in obs
    assert grown_mib < 400
    assert env.step("SELECT count(*) FROM people")[0] == "[(7,)]"


def test_many_rows_are_bounded(session):
    result = session.execute("SELECT a.ID FROM city a, city b LIMIT 300000")
    assert result.ok and result.capped and len(result.rows) == 200_000


def test_a_huge_statement_is_not_echoed_whole(session):
    result = session.execute("SELECT '" + "a" * 10_000_000)
    assert not result.ok and len(result.render(5)) < 10_000
    assert count(session) == 4079


# -- isolation ---------------------------------------------------------------------------------


def test_reset_after_ddl_and_dml_gives_pristine_data(session):
    session.execute("DELETE FROM city WHERE ID < 100")
    session.execute("DROP TABLE country")
    session.execute("CREATE TABLE extra (x)")
    session.execute("USE car_1")
    session.execute("DELETE FROM cars_data")
    session.reset("world_1")
    assert count(session) == 4079 and count(session, "country") == 239
    assert not session.execute("SELECT * FROM extra").ok
    assert count(session, "car_1.cars_data") == 27
    session.execute("USE car_1")
    assert count(session, "cars_data") == 27


def test_agent_writes_never_reach_the_gold(env):
    env.reset(options={"task": 0})
    assert env.task.db == "poker_player"
    env.step("DELETE FROM poker_player")
    env.step("DROP TABLE people")
    env.step("SELECT 1 WHERE 0")  # an empty answer
    ev = env.evaluate()
    assert ev.reward < 1 and not ev.info["gold_failed"] and ev.info["gold_rows"] == 5


def test_two_sessions_are_isolated(backend):
    a, b = backend.session(), backend.session()
    try:
        a.reset("world_1")
        b.reset("world_1")
        a.execute("DELETE FROM city")
        a.execute("CREATE TABLE note (x)")
        assert count(b) == 4079 and not b.execute("SELECT * FROM note").ok
        assert engine_pid(a) != engine_pid(b)
    finally:
        a.close()
        b.close()


def test_qualified_names_reach_only_the_sessions_own_copies(backend):
    """db.table of another database is a pristine copy attached to the session's engine:
    writes through any spelling of it never reach another session or the next episode."""
    a, b = backend.session(), backend.session()
    try:
        a.reset("world_1")
        b.reset("car_1")
        for attack in ("DELETE FROM car_1.cars_data", "DELETE FROM `car_1` . `cars_data`",
                       "DROP TABLE CAR_1.cars_data",
                       "UPDATE car_1.cars_data SET MPG = 0 WHERE 'x' = 'FROM car_1.cars_data'"):
            a.execute(attack)
        assert count(b, "cars_data") == 27
        a.reset("world_1")
        assert count(a, "car_1.cars_data") == 27
        names = a.execute("PRAGMA database_list")
        assert not names.ok or {r[1] for r in names.rows or []} <= {
            "main", "temp", "information_schema", "car_1"}
    finally:
        a.close()
        b.close()


@pytest.mark.timeout(120)  # a hang guard: the regex of these patterns never ended
def test_like_patterns_of_show_commands_do_not_hang_the_host(session):
    """SHOW DATABASES / SHOW TABLES LIKE were matched on the host with a backtracking
    regex: '%%…%x' (5,000 wildcards) against 'world_1', or '%a%a…%b' against a long table
    name the agent made, never finished (the runner hung)."""
    got = session.execute("SHOW DATABASES LIKE '" + "%" * 5000 + "x'")
    assert got.ok and got.rows == []
    got = session.execute("SHOW DATABASES LIKE '" + "%" * 5000 + "1'")
    assert got.ok and ("world_1",) in got.rows
    name = "a" * 200
    assert session.execute(f"CREATE TABLE {name} (x)").ok
    got = session.execute("SHOW TABLES LIKE '" + "%a" * 150 + "%b'")
    assert got.ok and got.rows == []
    got = session.execute("SHOW TABLES LIKE '" + "%a" * 150 + "%'")
    assert got.ok and got.rows == [(name,)]
    got = session.execute("SHOW FULL TABLES LIKE 'c\\_t%'")  # MySQL's escapes still hold
    assert got.ok and got.rows == []
    assert session.execute("SHOW TABLES LIKE 'CIT_'").rows == [("city",)]


ENDLESS = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
           "SELECT count(*) FROM c")


@pytest.mark.parametrize("gold", ["SELECT broken", "SELECT * FROM no_such_table",
                                  "SELECT count(*) FROM people WHERE"])
def test_a_gold_that_fails_is_an_error_not_an_empty_gold(gold):
    """A gold that fails (InterCode counted it as "no rows") would give an empty answer
    1.0: it is a RewardError (the runner's `error`), never a reward."""
    e = SqlEnv("spider-dev", backend="sqlite")
    try:
        e.reset(options={"task": 0})
        e.task = dataclasses.replace(e.task, gold=gold)
        assert e.step("SELECT Name FROM people WHERE 1 = 0")[0] == "[]"
        with pytest.raises(RewardError, match="the gold query failed"):
            e.step("submit")
    finally:
        e.close()


def test_a_gold_cut_by_the_clock_is_an_error_not_an_empty_gold():
    """A gold that ran out of time (a loaded machine) must not count as "no rows": an
    empty answer would then score 1.0. It is a RewardError (the runner's `error`)."""
    e = SqlEnv("spider-dev", backend="sqlite", limits=SqlLimits(timeout=0.5))
    try:
        e.reset(options={"task": 0})
        e.task = dataclasses.replace(e.task, gold=ENDLESS)
        obs, *_ = e.step("SELECT 1 WHERE 0")
        assert obs == "[]"
        with pytest.raises(RewardError, match="did not finish"):
            e.step("submit")
    finally:
        e.close()
