"""What the tests of the SQL engine run in-process (``inbox/sqlrepl.Engine``) share."""

from __future__ import annotations

import sqlite3

import pytest

NEEDS_SERIALIZE = pytest.mark.skipif(not hasattr(sqlite3.Connection, "serialize"),
                                     reason="the engine's images need Python 3.11's serialize")


def image(*statements: str) -> bytes:
    """A database image made by ``statements``."""
    conn = sqlite3.connect(":memory:")
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    return conn.serialize()
