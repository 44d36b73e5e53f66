"""Attacks on the MySQL backend's server-wide bounds, as a hostile agent (and a hostile
server set-up) would try them: what one session holds must stay bounded, whatever the
statement that makes it.

They run on throwaway MariaDB servers (``mysql_server``): one with the project's server
settings, one without the setting that makes every table InnoDB.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from mysql_server import SETTINGS, Server, small_tmp_server

from intercode.envs.sql import SqlEnv
from intercode.errors import ConfigError
from intercode.sql.backend import SqlLimits
from intercode.sql.mysql_backend import MysqlBackend
from intercode.sql.mysql_session import MEMORY_TABLE_BYTES
from intercode.sql.store import dump_store

TASK = 363  # concert_singer

#: One CALL makes ``n`` MEMORY tables of about 8 MiB each (within one table's bound).
FILL = """CREATE PROCEDURE fill(n INT) BEGIN DECLARE i INT DEFAULT 0; WHILE i < n DO
SET @s = CONCAT('CREATE TABLE m', i, ' (x VARCHAR(1000)) ENGINE=MEMORY');
PREPARE st FROM @s; EXECUTE st; DEALLOCATE PREPARE st;
SET @s = CONCAT('INSERT INTO m', i, ' SELECT REPEAT(''x'', 1000) FROM seq_1_to_2000');
PREPARE st FROM @s; EXECUTE st; DEALLOCATE PREPARE st;
SET i = i + 1; END WHILE; END"""
MEMORY_HELD = ("SELECT COALESCE(SUM(data_length), 0) FROM information_schema.tables "
               "WHERE table_schema = DATABASE() AND engine = 'MEMORY'")


def _server(settings: Path) -> Iterator[Server]:
    with small_tmp_server(settings) as got:
        if isinstance(got, str):
            if os.environ.get("INTERCODE_REQUIRE_MYSQL"):
                pytest.fail(f"no throwaway MariaDB server: {got}")
            pytest.skip(got)
        yield got


@pytest.fixture(scope="module")
def server(mysql_url: str) -> Iterator[Server]:  # mysql_url: where the MySQL tests run
    yield from _server(SETTINGS)


def _store():  # concert_singer only: the templates load in a moment
    spider = dump_store()
    return dataclasses.replace(spider, databases={"concert_singer":
                                                  spider.databases["concert_singer"]})


@pytest.fixture()
def env(server: Server) -> Iterator[SqlEnv]:
    e = SqlEnv("spider-dev", backend=MysqlBackend(server.url, SqlLimits(timeout=10.0),
                                                  _store()))
    e._owns_backend = True
    yield e
    e.close()


@pytest.mark.parametrize("sql_mode", ["DEFAULT", "''"])
def test_a_session_cannot_hold_server_memory_in_many_memory_tables(env, sql_mode):
    """max_heap_table_size bounds one MEMORY table, not how many: a procedure made
    100 MiB of them in 0.2 s (a few calls would take the server's memory). No session
    table is a MEMORY table (refused, or InnoDB where the agent allows substitution)."""
    env.reset(options={"task": TASK})
    env.step(f"SET SESSION sql_mode = {sql_mode}")
    env.step(FILL)
    env.step("CALL fill(4)")
    env.step(MEMORY_HELD)
    assert env._last is not None and env._last.rows is not None
    held = int(env._last.rows[0][0])
    assert held <= MEMORY_TABLE_BYTES, f"{held >> 20} MiB of MEMORY tables"
    env.step("SELECT country, count(*) FROM singer GROUP BY country")
    assert env.step("submit")[1] == 1.0


def test_a_server_that_lets_sessions_make_memory_tables_is_refused_in_one_line(
        mysql_url: str, tmp_path: Path) -> None:
    lax = tmp_path / "lax.cnf"
    lax.write_text("".join(line for line in SETTINGS.read_text().splitlines(keepends=True)
                           if not line.startswith("enforce_storage_engine")))
    for server in _server(lax):
        backend = MysqlBackend(server.url, SqlLimits(), _store())
        try:
            with pytest.raises(ConfigError, match="enforce_storage_engine=InnoDB") as got:
                backend.session()
            assert "\n" not in str(got.value)
        finally:
            backend.close()
