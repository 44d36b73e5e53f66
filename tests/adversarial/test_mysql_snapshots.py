"""Attacks on snapshots of the MySQL backend.

A snapshot's databases are the run's (made by the admin account); no session account
is granted anything on them. Each test acts as the agent would (statements through
its session) and asserts: the copies are out of reach, names are random and built
from trusted parts only, a hostile session state (locks, XA, odd variables, views)
gives either an exact restore or a clear SnapshotError with the episode going on, and
the number and size of live snapshots is capped.
"""

from __future__ import annotations

import re

import pytest

from intercode.envs.core.sql import make_backend
from intercode.errors import SnapshotError
from intercode.sql import mysql_snapshot as snaps
from intercode.sql.backend import SqlLimits

NAME = re.compile(r"^ic_[0-9a-f]{8}_s[0-9a-f]{12}_world_1$")


@pytest.fixture(scope="module")
def backend(mysql_url):
    b = make_backend("mysql", SqlLimits(timeout=2.0, max_rows=5), mysql_url)
    b.session().close()  # loads the templates
    yield b
    b.close()


def exists(admin, db: str) -> bool:
    with admin.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                    (db,))
        return bool(cur.fetchone()[0])


def test_an_agent_cannot_read_alter_or_drop_its_snapshot_copies(agent, admin):
    agent.execute("INSERT INTO city (Name) VALUES ('mine')")
    state = agent.save()
    copy = state.copies["world_1"]
    assert copy is not None and NAME.match(copy)
    for sql in (f"SELECT COUNT(*) FROM `{copy}`.city", f"DELETE FROM `{copy}`.city",
                f"DROP DATABASE `{copy}`", f"CREATE TABLE `{copy}`.x (a INT)",
                f"GRANT SELECT ON `{copy}`.* TO CURRENT_USER()"):
        got = agent.execute(sql)
        assert not got.ok and re.search(r"denied|Unknown|not allowed", got.error or ""), sql
    listed = agent.execute("SELECT schema_name FROM information_schema.schemata")
    assert copy not in {n for (n,) in listed.rows or []}
    agent.execute("DELETE FROM city")
    agent.load(state)
    assert agent.execute("SELECT COUNT(*) FROM city WHERE Name = 'mine'").rows == [(1,)]
    state.release()
    assert not exists(admin, copy)


def test_an_agent_cannot_reach_another_sessions_snapshot(backend, agent):
    other = backend.session()
    try:
        other.reset("world_1")
        state = other.save()
        copy = state.copies["world_1"]
        got = agent.execute(f"SELECT COUNT(*) FROM `{copy}`.city")
        assert not got.ok and "denied" in (got.error or "")
        with pytest.raises(SnapshotError, match="not a live snapshot of this SQL session"):
            agent.load(state)  # another session's state: refused
    finally:
        other.close()


def test_snapshot_names_are_random_and_do_not_repeat(agent):
    names = set()
    for _ in range(3):
        state = agent.save()
        names.add(state.copies["world_1"])
        state.release()
    assert len(names) == 3 and all(NAME.match(n or "") for n in names)


def test_hostile_user_variable_names_and_values_survive_exactly(agent):
    name = "a`; DROP DATABASE world_1; -- "
    value = "x'); DROP TABLE city; -- \\ `"
    ident = "`" + name.replace("`", "``") + "`"
    literal = "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    assert agent.execute(f"SET @{ident} = {literal}").ok
    assert agent.execute("SET SESSION time_zone = '+05:00', "
                         "sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'").ok
    before = agent.execute(f"SELECT @{ident}, @@time_zone, @@sql_mode").rows
    state = agent.save()
    agent.execute(f"SET @{ident} = NULL")
    agent.execute("SET SESSION sql_mode = DEFAULT, time_zone = DEFAULT")
    agent.load(state)
    assert agent.execute(f"SELECT @{ident}, @@time_zone, @@sql_mode").rows == before
    assert before is not None and before[0][0] == value
    assert agent.execute("SELECT COUNT(*) > 0 FROM city").rows == [(1,)]


def test_locks_and_xa_transactions_do_not_hang_a_snapshot(agent):
    """What only a connection holds ends with it: a snapshot starts a fresh one."""
    assert agent.execute("LOCK TABLES city WRITE").ok
    assert agent.execute("INSERT INTO city (Name) VALUES ('locked')").ok
    state = agent.save()
    assert agent.execute("SELECT COUNT(*) FROM country").ok  # the lock is gone
    agent.execute("XA START 'x'")
    agent.execute("INSERT INTO city (Name) VALUES ('xa')")
    agent.execute("XA END 'x'")
    agent.execute("XA PREPARE 'x'")
    again = agent.save()
    agent.load(state)
    assert agent.execute("SELECT Name FROM city WHERE Name IN ('locked', 'xa')").rows == [
        ("locked",)]
    again.release()
    state.release()


def test_what_copies_cannot_carry_is_refused_and_the_episode_goes_on(agent):
    assert agent.execute("CREATE VIEW v AS SELECT Name FROM city").ok
    assert agent.execute("SET @keep = 7").ok
    with pytest.raises(SnapshotError, match=r"copy tables only; .* holds view"):
        agent.save()
    assert agent.execute("SELECT @keep, COUNT(*) > 0 FROM v").rows == [(7, 1)]
    assert not agent._snapshots


def test_live_snapshots_are_capped(agent, admin, monkeypatch):
    states = [agent.save() for _ in range(snaps.MAX_LIVE)]
    with pytest.raises(SnapshotError, match=f"holds {snaps.MAX_LIVE} live snapshots"):
        agent.save()
    states.pop().release()
    states.append(agent.save())
    states.pop().release()
    monkeypatch.setattr(snaps, "MAX_BYTES", 1)
    with pytest.raises(SnapshotError, match="would hold more than"):
        agent.save()
    copies = [s.copies["world_1"] for s in states]
    agent.close()  # closing the session drops its snapshots
    assert not any(exists(admin, c) for c in copies if c)


def test_huge_user_variables_are_refused_cleanly(agent, monkeypatch):
    monkeypatch.setattr(snaps, "MAX_USER_VARIABLES", 3)
    agent.execute("SET @a = 1, @b = 2, @c = 3, @d = 4")
    with pytest.raises(SnapshotError, match="4 user variables"):
        agent.save()
    assert agent.execute("SELECT @d").rows == [(4,)]
    monkeypatch.setattr(snaps, "MAX_USER_VARIABLES", 1000)
    agent.execute("SET @big = REPEAT('x', 1000)")
    monkeypatch.setattr(snaps, "MAX_USER_BYTES", 100)
    with pytest.raises(SnapshotError, match="user variables hold more than"):
        agent.save()


def test_a_copy_the_agent_dropped_is_restored_as_dropped(agent):
    # the physical name is never shown, but the server can compute it
    agent.execute("SET @s = CONCAT('DROP DATABASE `', DATABASE(), '`')")
    agent.execute("PREPARE st FROM @s")
    assert agent.execute("EXECUTE st").ok
    state = agent.save()
    assert state.copies["world_1"] is None
    first = agent.execute("SELECT COUNT(*) FROM world_1.city")
    agent.load(state)
    assert agent.execute("SELECT COUNT(*) FROM world_1.city") == first


def test_tables_of_engines_that_name_other_tables_are_refused(agent):
    """A MERGE table lists tables by database: recreated by the admin in another
    session's copy it could reach this session's tables. Only plain engines are copied."""
    assert agent.execute("CREATE TABLE part (a INT)").ok
    made = agent.execute("CREATE TABLE m (a INT) ENGINE=MRG_MyISAM UNION=(part)")
    if made.ok:  # a server that lets sessions choose engines
        with pytest.raises(SnapshotError, match="mrg_myisam tables"):
            agent.save()
        assert agent.execute("DROP TABLE m").ok
    else:  # the project's servers make every table InnoDB
        assert "NO_ENGINE_SUBSTITUTION" in (made.error or ""), made
    state = agent.save()  # the plain table alone is fine
    assert agent.execute("INSERT INTO part VALUES (1)").ok
    agent.load(state)
    assert agent.execute("SELECT COUNT(*) FROM part").rows == [(0,)]
    state.release()


def test_a_server_without_user_variables_says_snapshots_are_unsupported(agent, monkeypatch):
    """Settings are never dropped silently: without USER_VARIABLES a snapshot is refused."""
    from intercode.errors import SnapshotUnsupported

    def missing(cur):
        cur.execute("SELECT VARIABLE_NAME FROM information_schema.NO_SUCH_TABLE")
        return {}

    monkeypatch.setattr(snaps, "user_variables", missing)
    agent.execute("SET @kept = 1")
    with pytest.raises(SnapshotUnsupported, match="USER_VARIABLES"):
        agent.save()
    assert agent.execute("SELECT @kept").rows == [(1,)]
