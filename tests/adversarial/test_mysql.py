"""Attacks on the MySQL-compatible server backend.

Each runs as the agent would: statements through an agent session (or an env step),
then asserts the outcome: nothing outside the session's own copies is reachable, a
wrong answer scores below 1, the gold is unharmed, results and messages stay bounded.
"""

from __future__ import annotations

import resource
import secrets

import pytest

from intercode.envs.core.sql import make_backend
from intercode.envs.sql import SqlEnv
from intercode.sql.backend import SqlLimits
from intercode.sql.mysql_backend import MysqlBackend, parse_url


@pytest.fixture(scope="module")
def backend(mysql_url):
    b = make_backend("mysql", SqlLimits(timeout=1.0, max_rows=5), mysql_url)
    b.session().close()  # loads the templates
    yield b
    b.close()


def run(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall()) if cur.description else []


def test_schemata_lists_only_the_sessions_own_copies(agent):
    got = agent.execute("SELECT schema_name FROM information_schema.schemata")
    assert got.ok, got.error
    assert {n for (n,) in got.rows} <= {"information_schema", "world_1"}
    tables = agent.execute("SELECT DISTINCT table_schema FROM information_schema.tables")
    assert {n for (n,) in tables.rows} <= {"information_schema", "performance_schema", "world_1"}


def test_templates_cannot_be_written_or_dropped(backend, agent, admin):
    template = backend.template("world_1")
    for attack in (f"DELETE FROM `{template}`.city", f"DROP TABLE `{template}`.city",
                   f"DROP DATABASE `{template}`", f"UPDATE `{template}`.city SET Name = ''",
                   f"SELECT count(*) FROM `{template}`.city"):
        assert not agent.execute(attack).ok, attack
    agent.execute("COMMIT")
    assert run(admin, f"SELECT count(*) FROM `{template}`.city") == [(4079,)]


def test_other_runs_and_new_databases_are_out_of_reach(agent, admin):
    other = f"ic_{secrets.token_hex(4)}"
    run(admin, "SELECT GET_LOCK(%s, 0)", (other,))  # a live run
    run(admin, f"CREATE DATABASE `{other}_t_victim`")
    try:
        assert not agent.execute(f"DROP DATABASE `{other}_t_victim`").ok
        assert not agent.execute(f"CREATE TABLE `{other}_t_victim`.x (a INT)").ok
        for name in ("ic_anything", f"{other}_t_new", "world_2", "mysql_copy"):
            assert not agent.execute(f"CREATE DATABASE `{name}`").ok, name
        assert run(admin, "SHOW DATABASES LIKE %s", (f"{other}\\_t\\_victim",))
        assert not run(admin, "SHOW DATABASES LIKE 'ic\\_anything'")
    finally:
        run(admin, f"DROP DATABASE IF EXISTS `{other}_t_victim`")


def test_no_kill_and_no_view_of_other_sessions(backend, agent, admin):
    gold = backend.session()
    try:
        gold.reset("world_1")
        for victim in (admin.thread_id(), gold.conn.thread_id()):
            assert not agent.execute(f"KILL {victim}").ok
            assert not agent.execute(f"KILL QUERY {victim}").ok
        assert gold.execute("SELECT count(*) FROM city").rows == [(4079,)]
        assert run(admin, "SELECT 1") == [(1,)]
        seen = agent.execute("SELECT id, user, info FROM information_schema.processlist")
        assert {row[0] for row in seen.rows} == {agent.conn.thread_id()}
        shown = agent.execute("SHOW FULL PROCESSLIST")
        assert {row[0] for row in shown.rows} == {agent.conn.thread_id()}
    finally:
        gold.close()


def test_show_grants_reveals_nothing_reusable(agent, mysql_url):
    import pymysql

    grants = [g for (g,) in agent.execute("SHOW GRANTS").rows]
    assert all("ic\\_%" not in g and "WITH GRANT OPTION" not in g for g in grants)
    assert all(g.startswith("GRANT USAGE ON *.*") or "ON `world_1`" in g
               or agent.backend.copy_name(agent.sid, "world_1").replace("_", "\\_") in g
               for g in grants), grants
    hashes = [g.split("PASSWORD '")[1].split("'")[0] for g in grants if "PASSWORD '" in g]
    assert not agent.execute("ALTER USER CURRENT_USER() ACCOUNT UNLOCK").ok
    agent.execute("SET PASSWORD = PASSWORD('')")  # allowed, but the account stays locked
    args = parse_url(mysql_url)
    for secret in [*hashes, ""]:  # the hash opens nothing: the account is locked
        with pytest.raises(pymysql.err.OperationalError):
            pymysql.connect(host=args["host"], port=args["port"], user=agent.account.name,
                            password=secret, connect_timeout=5)


def test_session_accounts_are_dropped_on_close(backend, admin):
    session = backend.session()
    session.reset("world_1")
    name, host = session.account.name, session.account.host
    session.close()
    import pymysql

    with pytest.raises(pymysql.err.MySQLError):  # ALTER USER of a missing account fails
        run(admin, "ALTER USER %s@%s ACCOUNT LOCK", (name, host))


@pytest.fixture(scope="module")
def env(mysql_url):
    e = SqlEnv("spider-dev", backend="mysql", mysql_url=mysql_url)
    yield e
    e.close()


def test_emptying_the_gold_database_scores_below_one(env):
    env.reset(options={"task": 0})  # poker players' names, from poker_player and people
    template = env.backend.template("poker_player")
    for attack in (f"DELETE FROM `{template}`.poker_player", "COMMIT",
                   f"DROP TABLE `{template}`.people", "DELETE FROM poker_player", "COMMIT"):
        env.step(attack)
    env.step("SELECT Name FROM people WHERE 1 = 0")  # an empty answer
    _, reward, _, _, info = env.step("submit")
    assert reward < 1 and not info["success"]
    env.reset(options={"task": 0})  # the gold is intact, and the next episode clean
    env.step(env.task.gold)
    _, reward, _, _, info = env.step("submit")
    assert reward == 1.0 and info["gold_rows"] > 0


def test_huge_results_are_capped_while_fetched(env):
    env.reset(options={"task": 0})
    env.step("DELETE FROM poker_player WHERE Poker_Player_ID = 1")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sql = "SELECT REPEAT('x', 1000000) FROM world_1.city LIMIT 600"  # 600 MB if buffered
    obs, _, _, _, info = env.step(sql)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert len(obs) < 16 * 2**20 and "more rows not shown" in obs
    assert info["rows"] < 600 and grown_mb < 200
    obs, *_ = env.step("SELECT count(*) FROM poker_player")  # same transaction, in sync
    assert obs == "[(4,)]"


def test_the_agent_cannot_lift_its_time_limit(agent):
    for attack in ("SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(4)",
                   "SELECT SLEEP(4)"):
        got = agent.execute(attack)
        assert got.timed_out and not got.ok, attack
        assert agent.execute("SET SESSION max_statement_time = 0").ok
    assert agent.execute("SELECT count(*) FROM city").rows == [(4079,)]


def test_server_messages_are_capped(agent):
    got = agent.execute("SELECT `" + "y" * 5000 + "`x FROM city WHERE " + "z" * 10_000_000)
    assert not got.ok and len(got.error) <= 1100  # MariaDB cuts its messages itself
    got = agent.execute("USE " + "w" * 10_000_000)  # echoed by the backend
    assert not got.ok and len(got.error) <= 1100 and "cut" in got.error


def test_dead_runs_are_dropped_and_live_ones_kept(mysql_url, admin):
    import pymysql

    dead, live = (f"ic_{secrets.token_hex(4)}" for _ in range(2))
    holder = pymysql.connect(**parse_url(mysql_url), autocommit=True)
    host = run(admin, "SELECT CURRENT_USER()")[0][0].rpartition("@")[2]
    try:
        assert run(holder, "SELECT GET_LOCK(%s, 0)", (live,)) == [(1,)]
        for r in (dead, live):
            run(admin, f"CREATE DATABASE `{r}_m`")
            run(admin, f"CREATE TABLE `{r}_m`.accounts (name VARCHAR(80), host VARCHAR(255))")
            run(admin, f"INSERT INTO `{r}_m`.accounts VALUES (%s, %s)", (f"{r}_a", host))
            run(admin, "CREATE USER %s@%s ACCOUNT LOCK", (f"{r}_a", host))
            run(admin, f"CREATE DATABASE `{r}_t_world_1`")
        b = MysqlBackend(mysql_url)
        try:
            b.admin()
            assert dead in b.dropped_runs and live not in b.dropped_runs
        finally:
            b.close()
        assert not run(admin, "SHOW DATABASES LIKE %s", (dead.replace("_", "\\_") + "\\_%",))
        with pytest.raises(pymysql.err.OperationalError):
            run(admin, "ALTER USER %s@%s ACCOUNT LOCK", (f"{dead}_a", host))
        assert len(run(admin, "SHOW DATABASES LIKE %s", (live.replace("_", "\\_") + "\\_%",))) == 2
        run(admin, "ALTER USER %s@%s ACCOUNT LOCK", (f"{live}_a", host))  # still there
    finally:
        holder.close()
        for r in (dead, live):
            run(admin, "DROP USER IF EXISTS %s@%s", (f"{r}_a", host))
            for (db,) in run(admin, "SHOW DATABASES LIKE %s", (r.replace("_", "\\_") + "\\_%",)):
                run(admin, f"DROP DATABASE `{db}`")


@pytest.mark.parametrize("attack", [
    ["LOCK TABLES city WRITE"],
    ["COMMIT", "XA START 'x1'", "DELETE FROM city", "XA END 'x1'", "XA PREPARE 'x1'"],
    ["COMMIT", "XA START 'x2','b\\'q',7", "DELETE FROM city", "XA END 'x2','b\\'q',7",
     "XA PREPARE 'x2','b\\'q',7"],
])
def test_locks_and_prepared_transactions_do_not_block_the_reset(agent, attack):
    for sql in attack:
        assert agent.execute(sql).ok, sql
    agent.reset("world_1")  # the admin's re-copy would wait on the agent's locks
    assert agent.execute("SELECT count(*) FROM city").rows == [(4079,)]


def test_an_admin_account_without_the_rights_gets_one_clear_line(mysql_url, admin):
    from intercode.errors import ConfigError

    name, password = f"icx_{secrets.token_hex(4)}", secrets.token_hex(16)
    host = run(admin, "SELECT CURRENT_USER()")[0][0].rpartition("@")[2]
    run(admin, "CREATE USER %s@%s IDENTIFIED BY %s", (name, host, password))
    try:
        run(admin, "GRANT ALL PRIVILEGES ON `ic\\_%%`.* TO %s@%s", (name, host))
        args = parse_url(mysql_url)
        backend = MysqlBackend(f"mysql://{name}:{password}@{args['host']}:{args['port']}")
        with pytest.raises(ConfigError, match="cannot make session accounts") as got:
            backend.admin()
        assert "\n" not in str(got.value) and "mariadb-start" in str(got.value)
        backend.close()
    finally:
        run(admin, "DROP USER IF EXISTS %s@%s", (name, host))


def test_databases_of_an_older_intercode_still_in_use_are_kept(mysql_url, admin):
    """A run of an intercode without run locks is alive while a connection uses its copy."""
    import pymysql

    old = f"ic_{secrets.token_hex(4)}"
    run(admin, f"CREATE DATABASE `{old}_t_world_1`")
    user = pymysql.connect(**parse_url(mysql_url), database=f"{old}_t_world_1")
    try:
        backend = MysqlBackend(mysql_url)
        try:
            backend.admin()
            assert old not in backend.dropped_runs
        finally:
            backend.close()
        assert run(admin, "SHOW DATABASES LIKE %s", (f"{old}\\_t\\_world\\_1",))
    finally:
        user.close()
        run(admin, f"DROP DATABASE IF EXISTS `{old}_t_world_1`")


def test_session_state_does_not_leak_into_the_next_episode(agent):
    assert agent.execute("SET SESSION sql_mode = 'ANSI_QUOTES'").ok
    assert agent.execute("CREATE VIEW v AS SELECT 1 AS x").ok  # commits: a re-copy
    agent.reset("world_1")
    assert agent.execute("SELECT count(*) FROM city").rows == [(4079,)]
    assert agent.execute('SELECT "a"').rows == [("a",)]


QUALIFIED_ATTACKS = [  # db.table in every form the name rewrite reads, aimed at pristine data
    "DELETE FROM car_1.cars_data",
    "DELETE FROM `car_1` . /* x */ `cars_data`",
    "UPDATE world_1.city, car_1.cars_data SET car_1.cars_data.MPG = 0, city.Name = ''",
    "DROP TABLE car_1.cars_data",
    "INSERT INTO car_1.cars_data SELECT * FROM car_1.cars_data",
    "DELETE FROM CAR_1.CARS_DATA WHERE 'it\\'s' = 'FROM car_1.cars_data'",
    "DELETE car_1.cars_data.* FROM car_1.cars_data",
]


def test_qualified_names_reach_only_the_sessions_own_copies(backend, agent, admin):
    """The rewrite of db.table maps a name to the session's copy, never past its grants:
    whatever the agent writes through qualified names, the templates and a second
    session's copies keep their rows, and the agent still sees only its own copies."""
    other = backend.session()
    try:
        other.reset("car_1")
        for attack in QUALIFIED_ATTACKS:
            agent.execute(attack)
        agent.execute("COMMIT")
        assert run(admin, f"SELECT count(*) FROM `{backend.template('car_1')}`.cars_data"
                   ) == [(27,)]
        assert other.execute("SELECT count(*) FROM cars_data").rows == [(27,)]
        seen = agent.execute("SELECT schema_name FROM information_schema.schemata")
        assert {n for (n,) in seen.rows} <= {"information_schema", "world_1", "car_1"}
        agent.reset("world_1")
        assert agent.execute("SELECT count(*) FROM car_1.cars_data").rows == [(27,)]
    finally:
        other.close()


@pytest.mark.parametrize("attack", [
    "/*!CREATE OR REPLACE TABLE city*/ SELECT 1 AS x",
    "/*M!100000 CREATE OR REPLACE TABLE city*/ SELECT 1 AS x",
    "/*!50000 CREATE OR REPLACE TABLE city */ SELECT 1 AS x",
    "/* a */ /*!CREATE OR REPLACE TABLE city*/ (SELECT 1 AS x)",
])
def test_executable_comments_do_not_commit_past_the_reset(agent, attack):
    """The server runs what stands in /*! */: a statement that reads as a SELECT but
    commits a CREATE was only rolled back, and the next episode saw a 1-row city."""
    assert agent.execute(attack).ok, attack
    assert agent.execute("SELECT count(*) FROM city").rows == [(1,)]
    agent.reset("world_1")
    assert agent.execute("SELECT count(*) FROM city").rows == [(4079,)]


def test_user_variables_and_locks_of_a_select_do_not_outlive_the_episode(agent):
    lock = f"ic_chan_{secrets.token_hex(4)}"
    assert agent.execute("SELECT @leak := 42").ok
    assert agent.execute("SELECT COUNT(*) INTO @leak2 FROM city").ok
    assert agent.execute("SELECT 1 FROM city WHERE 1--@leak3:=7\n").ok  # not a comment
    assert agent.execute(f"SELECT GET_LOCK /* x */ ('{lock}', 0)").rows == [(1,)]
    agent.reset("world_1")
    assert agent.execute(f"SELECT @leak, @leak2, @leak3, IS_FREE_LOCK('{lock}')").rows == [
        (None, None, None, 1)]


def test_the_metrics_pristine_copy_cannot_be_poisoned(mysql_url):
    """exec_match_nodistinct re-runs the agent's DISTINCT-stripped statement in a scratch
    session: an executable comment there replaced `people` for every later re-run (and in
    the agent's own next episode), so the right answer scored 0."""
    env = SqlEnv("spider-dev", backend="mysql", mysql_url=mysql_url,
                 metric="exec_match_nodistinct")
    try:
        env.reset(options={"task": 0})
        env.step("/*!CREATE OR REPLACE TABLE people*/ SELECT DISTINCT 'x' AS Name")
        env.step("submit")
        env.reset(options={"task": 0})
        answer = env.task.gold.replace("SELECT", "SELECT DISTINCT", 1)
        obs, *_ = env.step(answer)
        assert "'x'" not in obs
        _, reward, _, _, info = env.step("submit")
        assert reward == 1.0 and info["exec_match"] is True
    finally:
        env.close()


def test_using_a_dropped_copy_is_the_agents_outcome(agent):
    """DROP DATABASE on its own copy is within the agent's grants; a later USE of it, or a
    lost connection, raised a server error out of the step (an infrastructure error)."""
    assert agent.execute("SET SESSION sql_mode = 'ANSI_QUOTES'").ok
    assert agent.execute("SELECT count(*) FROM car_1.cars_data").ok
    assert agent.execute('DROP DATABASE "car_1"').ok
    assert agent.execute("USE car_1").ok
    assert agent.execute("SELECT count(*) FROM cars_data").rows == [(27,)]
    assert agent.execute("SET SESSION sql_mode = 'ANSI_QUOTES'").ok
    assert agent.execute('DROP DATABASE "car_1"').ok  # the current copy, then a lost link
    got = agent.execute("SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(4)")
    assert got.timed_out and not got.ok
    agent.reset("world_1")
    assert agent.execute("SELECT count(*) FROM car_1.cars_data").rows == [(27,)]


@pytest.mark.timeout(120)  # a hang guard: the regex of this pattern never ended
def test_like_pattern_of_show_databases_does_not_hang_the_host(agent):
    got = agent.execute("SHOW DATABASES LIKE '" + "%" * 5000 + "x'")
    assert got.ok and got.rows == []
    assert agent.execute("SHOW DATABASES LIKE 'WORLD\\_%'").rows == [("world_1",)]


def test_a_statement_that_is_not_valid_unicode_is_the_agents_outcome(env):
    """A lone surrogate in a statement raised UnicodeEncodeError out of the step (pymysql
    cannot encode it): an infrastructure error instead of the agent's failure."""
    env.reset(options={"task": 0})
    for sql in ("SELECT '\ud800'", "SELECT Name FROM people WHERE Name = '\udfff'"):
        obs, reward, done, _, info = env.step(sql)
        assert info["exit_code"] == 1 and "not valid Unicode" in obs
        assert reward == 0.0 and not done
    obs, *_ = env.step("SELECT count(*) FROM poker_player")
    assert obs == "[(5,)]"


@pytest.mark.timeout(120)  # a hang guard: the old regex took 2^40 steps here
def test_many_comments_before_a_statement_do_not_hang_the_host(agent):
    """The statement kind was read by a regex whose lazy comment could reach past its
    '*/': '/**/' * n before a non-word took 2^n steps on the host (n = 40: days)."""
    for sql in ("/**/" * 40 + "1", "/* a */" * 40 + "(1)", "/**/" * 40 + "SELECT 1"):
        agent.execute(sql)
    assert agent.execute("SELECT count(*) FROM city").rows == [(4079,)]


def test_temporary_tables_are_refused(agent):
    """A temporary table lives in the server's tmpdir (shared by every session, bounded
    by no setting) until its connection ends: filling it made other sessions' golds and
    CREATE USER fail. Session accounts cannot make one."""
    got = agent.execute("CREATE TEMPORARY TABLE fill (x TEXT) ENGINE=Aria")
    assert not got.ok and "denied" in (got.error or "")
    assert agent.execute("SELECT count(*) FROM city").rows == [(4079,)]


def test_the_agent_cannot_keep_raised_table_bounds(agent):
    """MEMORY tables hold server memory until the reset; their bound is the session's
    max_heap_table_size, which the agent can SET: it is set back after the statement."""
    for name in ("max_heap_table_size", "tmp_table_size", "tmp_disk_table_size"):
        assert agent.execute(f"SET SESSION {name} = 1099511627776").ok
        got = agent.execute(f"SELECT @@{name}").rows
        assert got is not None and got[0][0] <= 256 << 20, (name, got)
    made = agent.execute("CREATE TABLE m (x VARCHAR(1000)) ENGINE=MEMORY")  # InnoDB only
    assert not made.ok and "NO_ENGINE_SUBSTITUTION" in (made.error or ""), made


def test_a_session_account_holds_few_connections(agent):
    assert agent.execute("SELECT @@max_user_connections").rows == [(3,)]
