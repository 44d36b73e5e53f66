"""Server resources on the MySQL backend: what one session holds never fails another's
statements, and nothing the agent does changes or fails the gold's result.

The exhaustion tests run on a throwaway MariaDB whose tmpdir is a 48 MiB tmpfs (a full
/tmp in real life), started with the project's server settings (``mysql_server``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from mysql_server import Server, small_tmp_server

from intercode.envs.sql import SqlEnv
from intercode.sql.backend import SqlLimits
from intercode.sql.mysql_backend import MysqlBackend
from intercode.sql.store import dump_store

TASK = 363  # concert_singer: SELECT country, count(*) FROM singer GROUP BY country
EMPTY = "SELECT 1 FROM singer WHERE 1 = 0"


@pytest.fixture(scope="module")
def server(mysql_url: str) -> Iterator[Server]:  # mysql_url: where the MySQL tests run
    with small_tmp_server() as got:
        if isinstance(got, str):
            if os.environ.get("INTERCODE_REQUIRE_MYSQL"):
                pytest.fail(f"no throwaway MariaDB server: {got}")
            pytest.skip(got)
        yield got


@pytest.fixture()
def env(server):
    """The SQL environment on the throwaway server, with concert_singer only."""
    spider = dump_store()
    store = dataclasses.replace(spider, databases={"concert_singer":
                                                   spider.databases["concert_singer"]})
    e = SqlEnv("spider-dev", backend=MysqlBackend(server.url, SqlLimits(timeout=5.0), store))
    e._owns_backend = True
    yield e
    e.close()


def fill(tmpdir: Path) -> Path:
    """Fill the server's tmpdir, as any session's temporary data would."""
    path = tmpdir / "filler"
    with path.open("wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
        except OSError:
            pass
    return path


def test_the_agents_temporary_table_cannot_fill_the_servers_tmpdir(env, server):
    """The reported attack: a temporary table filling the tmpdir while its connection
    lives made the gold fail, and an empty answer then scored 1.0."""
    env.reset(options={"task": TASK})
    env.step("CREATE TEMPORARY TABLE fill (x TEXT) ENGINE=Aria")
    env.step("INSERT INTO fill SELECT REPEAT('x', 1000) FROM seq_1_to_200000")
    env.step(EMPTY)
    _, reward, _, _, info = env.step("submit")
    assert reward < 1 and not info["exec_match"] and not info["gold_failed"]
    other = SqlEnv("spider-dev", backend=env.backend)  # another session's CREATE USER/GRANT
    try:
        other.reset(options={"task": TASK})
        other.step(other.task.gold)
        assert other.step("submit")[1] == 1.0
    finally:
        other.close()


def test_exhaustion_after_the_reset_does_not_change_the_golds_result(env, server):
    env.reset(options={"task": TASK})
    filler = fill(server.tmpdir)
    try:
        env.step(EMPTY)
        _, reward, _, _, info = env.step("submit")
        assert reward < 1 and info["gold_rows"] == 3
    finally:
        filler.unlink()


def test_the_agent_cannot_raise_its_table_bounds_within_a_statement(env):
    env.reset(options={"task": TASK})
    for name in ("max_heap_table_size", "tmp_table_size", "tmp_disk_table_size"):
        obs, *_ = env.step(f"SET STATEMENT {name} = 1099511627776 FOR SELECT @@{name}")
        assert int(obs.strip("[](),")) <= 256 << 20, (name, obs)
