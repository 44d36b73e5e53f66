"""Databases of user datasets: a SQLite file or a SQL dump, for both backends.

A database file becomes one logical database named after the file (``shop.sql`` ->
``shop``). Three forms are read:

* a SQLite database file (it starts with ``SQLite format 3``);
* a MySQL dump (``CREATE TABLE `t` (...)`` with backquoted names, as ``mysqldump``
  writes it; see :mod:`intercode.sql.mysqldump` for what is understood);
* a SQLite dump (what ``sqlite3 db .dump`` writes, or any SQLite script), run in an
  in-memory SQLite database that cannot attach or write files.

Every form is turned into the metadata the SQL backends use (tables, columns, keys,
rows): the SQLite backend builds its image from it as it does for Spider; the MySQL
backend runs a MySQL dump's own statements, or ``CREATE TABLE`` / ``INSERT``
statements generated from the metadata for the SQLite forms (SQLite types mapped to
MySQL ones, text columns in keys as ``varchar(255)``).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from intercode.errors import DatasetError
from intercode.sql.mysqldump import Column, Database, Table, parse_dump, split_statements
from intercode.sql.store import SqlStore, build_image, build_info_schema

__all__ = ["read_database", "user_store"]

SQLITE_MAGIC = b"SQLite format 3\x00"
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")
_MYSQL_TABLE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`", re.I)
_SKIP_MYSQL = ("CREATE DATABASE", "USE ", "USE`", "DROP DATABASE", "CREATE USER", "GRANT",
               "FLUSH", "LOCK", "UNLOCK", "CREATE SCHEMA", "DROP SCHEMA")

Statement = tuple[str, tuple[Any, ...] | None]


@dataclass(frozen=True)
class UserDatabase:
    """One database of a user dataset, ready for both backends."""

    name: str
    path: str
    sha256: str
    kind: str  # "sqlite", "mysql-dump" or "sqlite-dump"
    database: Database
    image: bytes
    mysql: tuple[Statement, ...]


def database_name(path: Path) -> str:
    """The logical name of a database file (its name without the extension)."""
    return path.name.split(".", 1)[0]


def read_database(path: str | Path) -> UserDatabase:
    """Read a database file (see the module); :class:`DatasetError` if it cannot be used."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return _read(str(path), hashlib.sha256(raw).hexdigest(), raw)


@lru_cache(maxsize=32)
def _read(path: str, sha256: str, raw: bytes) -> UserDatabase:
    name = database_name(Path(path))
    if not NAME.match(name) or name.lower() == "information_schema":
        raise DatasetError(f"{Path(path).name}: the database takes its name from the file, "
                           f"and {name!r} is not usable (a letter, then letters, digits or _, "
                           "at most 40)")
    if not raw.strip():
        raise DatasetError(f"{Path(path).name} is empty")
    if raw.startswith(SQLITE_MAGIC):
        db = _from_sqlite(_open_sqlite_file(raw), name)
        kind, mysql = "sqlite", tuple(mysql_statements(db))
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{Path(path).name} is neither a SQLite file nor a UTF-8 SQL "
                               f"dump ({exc.reason} at byte {exc.start})") from None
        if _MYSQL_TABLE.search(text):
            db, statements = _from_mysql_dump(text, name, Path(path).name)
            kind, mysql = "mysql-dump", tuple((s, None) for s in statements)
        else:
            db = _from_sqlite(_run_sqlite_dump(text, Path(path).name), name)
            kind, mysql = "sqlite-dump", tuple(mysql_statements(db))
    if not db.tables:
        raise DatasetError(f"{Path(path).name} holds no table")
    image, counts = build_image(db)
    expected = {t.name: len(t.rows) for t in db.tables.values()}
    if counts != expected:
        raise DatasetError(f"{Path(path).name}: the rows do not fit their tables "
                           f"(read {expected}, stored {counts}; duplicate keys?)")
    return UserDatabase(name, path, sha256, kind, db, image, mysql)


# -- MySQL dumps ------------------------------------------------------------------------


def _from_mysql_dump(text: str, name: str, where: str) -> tuple[Database, list[str]]:
    """The dump's one database (renamed ``name``) and its statements without USE & co."""
    statements = [s for s in split_statements(text)
                  if not s[:20].upper().startswith(_SKIP_MYSQL)]
    body = ";\n".join([f"USE `{name}`", *statements])
    try:
        databases = parse_dump(body, source=where)
    except DatasetError:
        raise
    except (ValueError, IndexError, AttributeError) as exc:
        raise DatasetError(f"{where}: cannot read the dump ({exc})") from None
    return databases.get(name) or Database(name), statements


# -- SQLite files and dumps -------------------------------------------------------------


def _deny_files(action: int, arg1: Any, _arg2: Any, _db: Any, _source: Any) -> int:
    """An authorizer: no ATTACH/DETACH (which open or create files) and no VACUUM."""
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and str(arg1).lower() in ("load_extension",
                                                                   "fts3_tokenizer"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _memory() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.set_authorizer(_deny_files)
    return conn


def _open_sqlite_file(raw: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.deserialize(raw)  # (an internal ATTACH: before the authorizer)
        conn.set_authorizer(_deny_files)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        conn.close()
        raise DatasetError(f"not a readable SQLite database ({exc})") from None
    return conn


def _run_sqlite_dump(text: str, where: str) -> sqlite3.Connection:
    conn = _memory()
    try:
        conn.executescript(text)
    except sqlite3.Error as exc:
        conn.close()
        raise DatasetError(f"{where}: SQLite cannot run the dump ({exc}); a MySQL dump needs "
                           "backquoted table names (CREATE TABLE `t`)") from None
    if conn.in_transaction:
        conn.commit()
    return conn


def _from_sqlite(conn: sqlite3.Connection, name: str) -> Database:
    """Tables, columns, keys and rows of an SQLite database, as dump metadata."""
    db = Database(name)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY rowid")]
        for table in tables:
            db.tables[table] = _table(conn, table)
    except sqlite3.Error as exc:
        raise DatasetError(f"cannot read the SQLite database ({exc})") from None
    finally:
        conn.close()
    return db


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _table(conn: sqlite3.Connection, name: str) -> Table:
    info = conn.execute(f"PRAGMA table_info({_q(name)})").fetchall()
    pk = [row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]
    keyed = set(pk)
    table = Table(name, [], primary_key=pk)
    for fk_id in sorted({r[0] for r in conn.execute(f"PRAGMA foreign_key_list({_q(name)})")}):
        rows = [r for r in conn.execute(f"PRAGMA foreign_key_list({_q(name)})") if r[0] == fk_id]
        rows.sort(key=lambda r: r[1])
        local, target = [r[3] for r in rows], rows[0][2]
        remote = [r[4] or (pk[i] if i < len(pk) else r[3]) for i, r in enumerate(rows)]
        table.foreign_keys.append((local, target, remote))
        keyed.update(local)
    for index in conn.execute(f"PRAGMA index_list({_q(name)})").fetchall():
        cols = [r[2] for r in conn.execute(f"PRAGMA index_info({_q(index[1])})")]
        if None in cols:
            continue  # an index on expressions
        if index[2] and index[3] != "pk":
            table.unique_keys.append(cols)
            keyed.update(cols)
        elif not index[2]:
            table.keys.append(cols)
            keyed.update(cols)
    for _cid, col, decl, notnull, default, _pk in info:
        table.columns.append(Column(col, mysql_type(decl or "", col in keyed),
                                    nullable=not notnull and col not in pk,
                                    default=_default(default)))
    table.rows = [tuple(row) for row in conn.execute(f"SELECT * FROM {_q(name)}")]
    for row in table.rows:
        for value in row:
            if isinstance(value, bytes):
                raise DatasetError(f"table {name} holds a BLOB value; only numbers, text and "
                                   "NULL are supported")
    return table


def _default(value: str | None) -> str | None:
    if value is None or value.upper() == "NULL":
        return None
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


_SIZED = re.compile(r"^\s*(n?var)?char(acter)?\s*(\(\s*\d+\s*\))?", re.I)
_DECIMAL = re.compile(r"^\s*(decimal|numeric)\s*(\(\s*\d+\s*(,\s*\d+\s*)?\))?", re.I)


def mysql_type(declared: str, keyed: bool = False) -> str:
    """The MySQL column type of an SQLite declared type (by SQLite's affinity rules)."""
    t = declared.strip().lower()
    if "int" in t:
        return "bigint" if "big" in t else "int"
    if t in ("date", "datetime", "time", "timestamp", "year"):
        return t
    if m := _DECIMAL.match(t):
        return "decimal" + re.sub(r"\s+", "", m.group(2) or "(20,6)")
    if (m := _SIZED.match(t)) and m.group(3) and "char" in t:
        return ("varchar" if m.group(1) else "char") + re.sub(r"\s+", "", m.group(3))
    if any(k in t for k in ("real", "floa", "doub")):
        return "double"
    if keyed or any(k in t for k in ("char", "clob")):
        return "varchar(255)"
    return "text"


def mysql_statements(db: Database) -> list[Statement]:
    """``CREATE TABLE`` and ``INSERT`` statements building ``db`` on a MySQL server."""
    out: list[Statement] = []
    for table in db.tables.values():
        lines = []
        for col in table.columns:
            line = f"  `{col.name}` {col.mysql_type}"
            if not col.nullable:
                line += " NOT NULL"
            lines.append(line)
        if table.primary_key:
            lines.append(f"  PRIMARY KEY ({', '.join(f'`{c}`' for c in table.primary_key)})")
        for cols in table.unique_keys:
            lines.append(f"  UNIQUE KEY ({', '.join(f'`{c}`' for c in cols)})")
        for cols in table.keys:
            lines.append(f"  KEY ({', '.join(f'`{c}`' for c in cols)})")
        for local, target, remote in table.foreign_keys:
            lines.append(f"  FOREIGN KEY ({', '.join(f'`{c}`' for c in local)}) REFERENCES "
                         f"`{target}` ({', '.join(f'`{c}`' for c in remote)})")
        out.append((f"CREATE TABLE `{table.name}` (\n" + ",\n".join(lines) + "\n)", None))
        marks = ", ".join("%s" for _ in table.columns)
        for row in table.rows:
            out.append((f"INSERT INTO `{table.name}` VALUES ({marks})", row))
    return out


# -- stores -----------------------------------------------------------------------------


def user_store(databases: tuple[UserDatabase, ...]) -> SqlStore:
    """The store of a user dataset's databases (for either backend)."""
    names = {d.name for d in databases}
    if len(names) != len(databases):
        raise DatasetError("two database files of the dataset have the same name")
    metadata = {d.name: d.database for d in databases}
    return SqlStore(metadata, {d.name: d.image for d in databases}, build_info_schema(metadata),
                    mysql={d.name: d.mysql for d in databases})
