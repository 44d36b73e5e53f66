"""The embedded SQLite backend refuses anything that reaches files or extensions."""

from __future__ import annotations

import os
import uuid

import pytest

from intercode.sql.sqlite_backend import SqliteBackend


@pytest.fixture(scope="module")
def session():
    s = SqliteBackend().session()
    s.reset("world_1")
    yield s
    s.close()


@pytest.mark.parametrize("template", [
    "ATTACH DATABASE '{path}' AS x",
    "VACUUM INTO '{path}'",
    "/* sneaky */ VACUUM INTO '{path}'",
    "-- comment\nVACUUM main INTO '{path}'",
    "SELECT load_extension('{path}')",
    "PRAGMA writable_schema = 1",
    "PRAGMA temp_store_directory = '{path}'",
    "INSERT INTO information_schema.TABLES VALUES (1,2,3,4,5,6,7,8)",
    "DROP TABLE information_schema.COLUMNS",
])
def test_refused(session, template, tmp_path):
    path = tmp_path / f"x-{uuid.uuid4().hex}.db"
    result = session.execute(template.format(path=path))
    assert not result.ok and "authoriz" in result.error
    assert not path.exists()
    assert session.execute("SELECT count(*) FROM city").rows == [(4079,)]


def test_read_only_pragmas_work(session):
    result = session.execute("PRAGMA table_info(city)")
    assert result.ok and [r[1] for r in result.rows][:2] == ["ID", "Name"]


def test_no_file_appears_in_the_working_directory(session, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session.execute("CREATE TABLE t (x)")
    session.execute("INSERT INTO t VALUES (1)")
    assert os.listdir(tmp_path) == []
