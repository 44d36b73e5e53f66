"""Tables and columns that share a name: ``orchestra.Orchestra`` is a column, on both backends.

Every collision of the 20 Spider databases is found from the schemas: a column named
as a table of its database, or a column of a table named as a database whose table it
also names (the case that was rewritten as ``db.table``). Each is queried with
``table.column`` through an agent session, and the rows must be those of the same
query, not rewritten, on the original database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from intercode.envs.core.sql import make_backend
from intercode.sandbox.inbox import sqlconn
from intercode.sql.backend import SqlBackend, SqlLimits
from intercode.sql.store import dump_store


def collisions() -> list[tuple[str, str, str]]:
    """(database, table, column) of every table/column name collision."""
    store = dump_store()
    by_name = {name.lower(): db for name, db in store.databases.items()}
    found = []
    for name, db in store.databases.items():
        tables = {t.lower() for t in db.tables}
        for table_name, table in db.tables.items():
            namesake = by_name.get(table_name.lower())
            theirs = {t.lower() for t in namesake.tables} if namesake else set()
            for col in table.columns:
                if col.name.lower() in tables | theirs:
                    found.append((name, table_name, col.name))
    return found


COLLISIONS = collisions()


def queries(table: str, column: str) -> list[str]:
    t, c = table, column
    return [
        f"SELECT {t}.{c} FROM {t} ORDER BY {t}.{c}",
        f"SELECT {t.lower()}.{c.lower()} FROM {t.lower()} ORDER BY {t.lower()}.{c.lower()}",
        f"SELECT `{t}`.`{c}`, COUNT(*) FROM `{t}` GROUP BY `{t}`.`{c}` ORDER BY `{t}`.`{c}`",
        f"SELECT {t}.{c} FROM {t} WHERE {t}.{c} IN (SELECT {t}.{c} FROM {t}) "
        f"ORDER BY {t}.{c} DESC",
        f"SELECT x.{c} FROM {t} AS x JOIN {t} ON x.{c} = {t}.{c} ORDER BY {t}.{c}",
    ]


def test_the_enumeration_finds_the_known_collisions() -> None:
    assert ("orchestra", "orchestra", "Orchestra") in COLLISIONS
    assert ("course_teach", "course", "Course") in COLLISIONS


@pytest.fixture(params=["sqlite", "mysql"], scope="module")
def backend(request) -> Iterator[SqlBackend]:
    url = request.getfixturevalue("mysql_url") if request.param == "mysql" else None
    b = make_backend(request.param, SqlLimits(timeout=5.0), url)
    yield b
    b.close()


def original_rows(backend: SqlBackend, db: str, sql: str) -> list[tuple[Any, ...]]:
    """The query, not rewritten, on the original database (trusted test-side access)."""
    if backend.name == "sqlite":
        store = dump_store()
        conn = sqlconn.open_image(store.images[db], None, lambda: db)
        try:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
        finally:
            conn.close()
    from intercode.sql.mysql_backend import MysqlBackend

    assert isinstance(backend, MysqlBackend)
    backend.admin()
    conn = backend.connect()
    try:
        conn.select_db(backend.template(db))
        with conn.cursor() as cur:
            cur.execute(sql)
            return [tuple(r) for r in cur.fetchall()]
    finally:
        conn.close()


@pytest.mark.parametrize(("db", "table", "column"), COLLISIONS)
def test_table_column_references_run_as_on_the_original(backend, db, table, column) -> None:
    session = backend.session()
    try:
        session.reset(db)
        for sql in queries(table, column):
            result = session.execute(sql)
            assert result.ok, (sql, result.error)
            expected = original_rows(backend, db, sql)
            assert expected, sql  # the comparison means something
            assert [tuple(r) for r in result.rows or []] == expected, sql
        # db.table.column names the database, in expressions too
        plain = session.execute(queries(table, column)[0])
        three = session.execute(f"SELECT {db}.{table}.{column} FROM {db}.{table} "
                                f"ORDER BY {db}.{table}.{column}")
        assert three.ok, three.error
        assert three.rows == plain.rows
    finally:
        session.close()
