"""The contract every SQL backend passes: isolation, MySQL commands, errors, time limits."""

from __future__ import annotations

import pytest

from intercode.envs.core.sql import make_backend
from intercode.sql.backend import SqlLimits


@pytest.fixture(params=["sqlite", "mysql"], scope="module")
def backend(request):
    url = request.getfixturevalue("mysql_url") if request.param == "mysql" else None
    b = make_backend(request.param, SqlLimits(timeout=1.0, max_rows=5), url)
    yield b
    b.close()


@pytest.fixture()
def session(backend):
    s = backend.session()
    s.reset("world_1")
    yield s
    s.close()


def rows(session, sql):
    result = session.execute(sql)
    assert result.ok, result.error
    return result.rows


def test_reset_gives_a_pristine_database(session):
    assert rows(session, "SELECT count(*) FROM city") == [(4079,)]
    session.execute("DELETE FROM city WHERE ID < 100")
    session.execute("UPDATE country SET Name = 'X'")
    assert rows(session, "SELECT count(*) FROM city") == [(3980,)]
    session.reset("world_1")
    assert rows(session, "SELECT count(*) FROM city") == [(4079,)]
    assert rows(session, "SELECT count(*) FROM country WHERE Name = 'X'") == [(0,)]


def test_ddl_does_not_survive_a_reset(session):
    session.execute("DROP TABLE city")
    session.execute("CREATE TABLE extra (x INT)")
    assert not session.execute("SELECT count(*) FROM city").ok
    session.reset("world_1")
    assert rows(session, "SELECT count(*) FROM city") == [(4079,)]
    assert not session.execute("SELECT * FROM extra").ok


def test_sessions_are_isolated(backend):
    agent, gold = backend.session(), backend.session()
    try:
        agent.reset("world_1")
        gold.reset("world_1")
        agent.execute("DELETE FROM city")
        agent.execute("DROP TABLE countrylanguage")
        assert rows(gold, "SELECT count(*) FROM city") == [(4079,)]
        assert rows(gold, "SELECT count(*) FROM countrylanguage") == [(984,)]
    finally:
        agent.close()
        gold.close()


def test_mysql_exploration_commands(session):
    assert rows(session, "SHOW TABLES") == [("city",), ("country",), ("countrylanguage",)]
    described = rows(session, "DESCRIBE city")
    assert [r[0] for r in described] == ["ID", "Name", "CountryCode", "District", "Population"]
    assert all(len(r) == 6 for r in described) and described[0][3] == "PRI"
    assert rows(session, "desc `city`;") == described
    assert rows(session, "SHOW COLUMNS FROM city") == described
    names = [r[0] for r in rows(session, "SHOW DATABASES")]
    assert "world_1" in names and "car_1" in names and len(names) == 21
    assert all(not n.startswith("ic_") for n in names)
    assert "city" in rows(session, "SHOW CREATE TABLE city")[0][1]


def test_use_switches_database_and_names_stay_logical(session):
    assert session.execute("USE car_1").ok
    assert session.current_db == "car_1"
    assert rows(session, "SELECT DATABASE()") == [("car_1",)]
    assert rows(session, "SELECT count(*) FROM cars_data") == [(27,)]
    assert rows(session, "SELECT count(*) FROM world_1.city") == [(4079,)]
    error = session.execute("SELECT * FROM no_such_table").error
    assert error and "ic_" not in error
    assert not session.execute("USE no_such_db").ok


def test_table_names_are_case_insensitive_and_qualified_columns_work(session):
    assert rows(session, "SELECT count(*) FROM CITY") == [(4079,)]
    session.reset("singer")
    assert rows(session, "SELECT singer.Name FROM singer WHERE singer.Singer_ID = 1") == [
        ("Liliane Bettencourt",)]


def test_information_schema(session):
    got = rows(session, "SELECT table_name FROM information_schema.tables "
                        "WHERE table_schema = 'world_1'")
    assert sorted(r[0].lower() for r in got) == ["city", "country", "countrylanguage"]


def test_errors_are_results_and_the_session_goes_on(session):
    for bad in ("SELEC 1", "SELECT nope FROM city", "SELECT * FROM"):
        result = session.execute(bad)
        assert not result.ok and result.render(5).startswith("Error executing query: ")
    assert rows(session, "SELECT 1") == [(1,)]


def test_a_runaway_query_is_interrupted(session, backend):
    slow = ("SELECT count(*) FROM city a, city b, city c" if backend.name == "sqlite"
            else "SELECT SLEEP(30)")
    result = session.execute(slow)
    assert result.timed_out and not result.ok
    assert rows(session, "SELECT count(*) FROM country") == [(239,)]


def test_rows_beyond_the_observation_limit_are_counted(session):
    result = session.execute("SELECT ID FROM city ORDER BY ID")
    assert len(result.rows) == 4079
    text = result.render(5)
    assert text.startswith("[(1,), (2,), (3,), (4,), (5,)]")
    assert "4074 more rows not shown" in text


def test_a_server_run_drops_its_databases_on_close(mysql_url):
    import pymysql

    from intercode.sql.mysql_backend import MysqlBackend, parse_url

    backend = MysqlBackend(mysql_url, SqlLimits(timeout=2))
    session = backend.session()
    session.reset("car_1")
    session.execute("USE world_1")
    conn = pymysql.connect(**parse_url(mysql_url), ssl_disabled=True)
    try:
        with conn.cursor() as cur:
            pattern = backend.run_id.replace("_", "\\_") + "\\_%"
            cur.execute("SHOW DATABASES LIKE %s", (pattern,))
            # the templates, this session's copies and the run's registry of accounts
            assert len(cur.fetchall()) == 20 + 2 + 1
            session.close()
            backend.close()
            cur.execute("SHOW DATABASES LIKE %s", (pattern,))
            assert cur.fetchall() == ()
    finally:
        conn.close()


def test_the_run_configuration_never_stores_a_password():
    from intercode.runner.run import redact_url

    assert redact_url("mysql://u:secret@h:3306") == "mysql://u:***@h:3306"
    assert redact_url("mysql://u@h") == "mysql://u@h" and redact_url(None) is None


TINY_DUMP = """CREATE DATABASE IF NOT EXISTS `tiny_a` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;
USE `tiny_a`;
DROP TABLE IF EXISTS `t`;
CREATE TABLE `t` (
  `v` int NOT NULL,
  PRIMARY KEY (`v`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO `t` VALUES (1),(2);
CREATE DATABASE IF NOT EXISTS `tiny_b` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;
USE `tiny_b`;
DROP TABLE IF EXISTS `u`;
CREATE TABLE `u` (
  `w` int NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO `u` VALUES (9);
"""


def test_the_server_backend_serves_the_store_it_is_given(mysql_url, tmp_path):
    from intercode.sql.mysql_backend import MysqlBackend
    from intercode.sql.mysqldump import parse_dump
    from intercode.sql.store import SqlStore, build_image, build_info_schema

    dump = tmp_path / "tiny.sql"
    dump.write_text(TINY_DUMP, encoding="utf-8")
    databases = {"tiny_a": parse_dump(TINY_DUMP)["tiny_a"]}  # tiny_b is not in the store
    store = SqlStore(databases, {"tiny_a": build_image(databases["tiny_a"])[0]},
                     build_info_schema(databases), dump=dump)
    backend = MysqlBackend(mysql_url, SqlLimits(timeout=5), store=store)
    try:
        session = backend.session()
        session.reset("tiny_a")
        assert session.execute("SELECT v FROM t ORDER BY v").rows == [(1,), (2,)]
        assert session.execute("SHOW DATABASES").rows == [("information_schema",), ("tiny_a",)]
        templates = backend.query("SHOW DATABASES LIKE %s",
                                  (backend.run_id.replace("_", "\\_") + "\\_t\\_%",))
        assert [name for (name,) in templates] == [backend.template("tiny_a")]
        session.close()
    finally:
        backend.close()


def test_the_server_backend_refuses_a_store_without_its_dump(mysql_url):
    from intercode.errors import ConfigError
    from intercode.sql.mysql_backend import MysqlBackend
    from intercode.sql.store import SqlStore

    with pytest.raises(ConfigError, match="needs a store built from a MySQL dump"):
        MysqlBackend(mysql_url, store=SqlStore({}, {}, b""))
