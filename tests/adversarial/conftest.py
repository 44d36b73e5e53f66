"""Fixtures of the MySQL attack modules (each defines its own ``backend``)."""

from __future__ import annotations

import pytest

from intercode.sql.mysql_backend import parse_url


@pytest.fixture()
def agent(backend):
    """A session of the module's backend on ``world_1``, as the agent has it."""
    s = backend.session()
    s.reset("world_1")
    yield s
    s.close()


@pytest.fixture()
def admin(mysql_url):
    """A connection as the URL's account (the backend's admin), for setting scenes."""
    import pymysql

    conn = pymysql.connect(**parse_url(mysql_url), autocommit=True)
    yield conn
    conn.close()
