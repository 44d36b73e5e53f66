"""The databases of one of InterCode's MySQL dumps as SQLite images, built and cached.

A dataset brings its dump (Spider's ``ic_spider_dbs.sql``, WikiSQL's, BIRD's: a data
file key of :mod:`intercode.datafiles`). InterCode's published numbers were computed on
``ic_spider_dbs.sql`` (which differs from original Spider in several tables), so the
images are built from that dump: every table's row count is checked against the dump's.
Images are serialised SQLite databases; an episode deserialises a private copy (a few tens of µs).
An ``information_schema`` image (SCHEMATA, TABLES, COLUMNS, KEY_COLUMN_USAGE with
MySQL's column names) is built beside them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from intercode.errors import DatasetError
from intercode.fetch import data_file
from intercode.fsutil import cache_dir, write_atomic
from intercode.sql.mysqldump import Database, parse_dump
from intercode.sql.schema import column_key, create_table_sql, quote

__all__ = ["INFO_SCHEMA", "SqlStore", "build_image", "build_info_schema", "dump_store"]

STORE_VERSION = 1
INFO_SCHEMA = "information_schema"


@dataclass(frozen=True)
class SqlStore:
    """Metadata of every database, and its pristine SQLite image.

    ``mysql``: for a user dataset, the statements (SQL and its parameters) that build
    each database on a MySQL server. ``dump`` is the MySQL dump a store was built from
    (Spider's, WikiSQL's, ...): the mysql backend loads the store's databases from it. A
    store with neither cannot serve a MySQL server.
    """

    databases: dict[str, Database]
    images: dict[str, bytes]
    info_schema: bytes
    mysql: dict[str, tuple[tuple[str, tuple[Any, ...] | None], ...]] | None = None
    dump: Path | None = None

    def names(self) -> list[str]:
        """Database names, sorted as ``SHOW DATABASES`` sorts them."""
        return sorted(self.databases, key=str.lower)


@lru_cache(maxsize=4)
def dump_store(dump_key: str = "spider_dbs") -> SqlStore:
    """The store of a dump, by its data file key (built and cached on first use)."""
    path = data_file(dump_key)
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()[:12]
    databases = parse_dump(raw.decode("utf-8"), source=path.name)
    if not databases:
        raise DatasetError(f"{path} holds no database")
    folder = cache_dir() / "sqlite" / f"{dump_key}-{digest}-v{STORE_VERSION}"
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not manifest.is_file():
                _build_into(folder, databases)
    counts = json.loads(manifest.read_text())
    images = {}
    for name, db in databases.items():
        image = (folder / f"{name}.sqlite").read_bytes()
        if counts.get(name) != _dump_counts(db):
            raise DatasetError(f"the cached database {name} in {folder} does not match the dump; "
                               "delete that folder to rebuild it")
        images[name] = image
    info = (folder / f"{INFO_SCHEMA}.sqlite").read_bytes()
    for db in databases.values():
        for table in db.tables.values():
            table.rows = []  # the images hold the rows; keep only the metadata in memory
    return SqlStore(databases, images, info, dump=path)


def _dump_counts(db: Database) -> dict[str, int]:
    return {name: len(t.rows) for name, t in db.tables.items()}


def _build_into(folder: Path, databases: dict[str, Database]) -> None:
    counts = {}
    for name, db in databases.items():
        image, actual = build_image(db)
        expected = _dump_counts(db)
        if actual != expected:
            raise DatasetError(f"database {name}: row counts {actual} differ from the dump's "
                               f"{expected}")
        write_atomic(folder / f"{name}.sqlite", image)
        counts[name] = expected
    write_atomic(folder / f"{INFO_SCHEMA}.sqlite", build_info_schema(databases))
    write_atomic(folder / "manifest.json", json.dumps(counts, indent=1).encode())


def build_image(db: Database) -> tuple[bytes, dict[str, int]]:
    """A serialised SQLite database of ``db`` and the row count of each table."""
    conn = sqlite3.connect(":memory:")
    try:
        for table in db.tables.values():
            for statement in create_table_sql(table):
                conn.execute(statement)
            if table.rows:
                marks = ", ".join("?" for _ in table.columns)
                conn.executemany(f"INSERT INTO {quote(table.name)} VALUES ({marks})", table.rows)
        conn.commit()
        counts = {name: conn.execute(f"SELECT COUNT(*) FROM {quote(name)}").fetchone()[0]
                  for name in db.tables}
        return conn.serialize(), counts
    finally:
        conn.close()


def build_info_schema(databases: dict[str, Database]) -> bytes:
    """MySQL's ``information_schema`` views of the dump, as SQLite tables."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(
            "CREATE TABLE SCHEMATA (CATALOG_NAME TEXT, SCHEMA_NAME TEXT COLLATE NOCASE, "
            "DEFAULT_CHARACTER_SET_NAME TEXT, DEFAULT_COLLATION_NAME TEXT, SQL_PATH TEXT);"
            "CREATE TABLE TABLES (TABLE_CATALOG TEXT, TABLE_SCHEMA TEXT COLLATE NOCASE, "
            "TABLE_NAME TEXT COLLATE NOCASE, TABLE_TYPE TEXT, ENGINE TEXT, TABLE_ROWS INTEGER, "
            "TABLE_COLLATION TEXT, TABLE_COMMENT TEXT);"
            "CREATE TABLE COLUMNS (TABLE_CATALOG TEXT, TABLE_SCHEMA TEXT COLLATE NOCASE, "
            "TABLE_NAME TEXT COLLATE NOCASE, COLUMN_NAME TEXT COLLATE NOCASE, "
            "ORDINAL_POSITION INTEGER, COLUMN_DEFAULT TEXT, IS_NULLABLE TEXT, DATA_TYPE TEXT, "
            "COLUMN_TYPE TEXT, COLUMN_KEY TEXT, EXTRA TEXT, COLUMN_COMMENT TEXT);"
            "CREATE TABLE KEY_COLUMN_USAGE (CONSTRAINT_NAME TEXT, TABLE_SCHEMA TEXT COLLATE "
            "NOCASE, TABLE_NAME TEXT COLLATE NOCASE, COLUMN_NAME TEXT COLLATE NOCASE, "
            "ORDINAL_POSITION INTEGER, REFERENCED_TABLE_SCHEMA TEXT, REFERENCED_TABLE_NAME TEXT, "
            "REFERENCED_COLUMN_NAME TEXT);")
        for name in sorted(databases, key=str.lower):
            db = databases[name]
            conn.execute("INSERT INTO SCHEMATA VALUES ('def', ?, 'utf8mb4', 'utf8mb4_general_ci', "
                         "NULL)", (name,))
            for table in db.tables.values():
                conn.execute("INSERT INTO TABLES VALUES ('def', ?, ?, 'BASE TABLE', 'InnoDB', ?, "
                             "'utf8mb4_general_ci', '')", (name, table.name.lower(),
                                                           len(table.rows)))
                for pos, col in enumerate(table.columns, 1):
                    conn.execute("INSERT INTO COLUMNS VALUES ('def', ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                 "?, '')", (name, table.name.lower(), col.name, pos, col.default,
                                            "YES" if col.nullable else "NO",
                                            col.mysql_type.split("(")[0], col.mysql_type,
                                            column_key(table, col),
                                            "auto_increment" if col.auto_increment else ""))
                for pos, key in enumerate(table.primary_key, 1):
                    conn.execute("INSERT INTO KEY_COLUMN_USAGE VALUES ('PRIMARY', ?, ?, ?, ?, "
                                 "NULL, NULL, NULL)", (name, table.name.lower(), key, pos))
                for i, (local, target, remote) in enumerate(table.foreign_keys):
                    for pos, (a, b) in enumerate(zip(local, remote, strict=False), 1):
                        conn.execute("INSERT INTO KEY_COLUMN_USAGE VALUES (?, ?, ?, ?, ?, ?, ?, "
                                     "?)", (f"{table.name}_FK_{i}", name, table.name.lower(), a,
                                            pos, name, target.lower(), b))
        conn.commit()
        return conn.serialize()
    finally:
        conn.close()
