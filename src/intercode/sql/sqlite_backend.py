"""The embedded SQLite backend: every episode gets a private in-memory copy.

Isolation: each session deserialises pristine images, so nothing an agent does
(``INSERT``, ``DROP``, ``CREATE``) reaches the gold's session, the next episode or
another worker. Safety: an authorizer refuses ``ATTACH``/``DETACH``, every ``PRAGMA``
but read-only schema ones, writes to ``information_schema``, and extension loading;
``VACUUM INTO`` (which writes a file, through an internal ATTACH) is refused too, and
no further database can be attached at all; a progress handler interrupts any
statement at the time limit.
"""

from __future__ import annotations

import re
import sqlite3
import time

from intercode.sql import mysql_compat as compat
from intercode.sql.backend import SqlBackend, SqlLimits, SqlSession
from intercode.sql.results import QueryResult, fetch_capped
from intercode.sql.store import INFO_SCHEMA, SqlStore, spider_store

READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info",
                          "index_xinfo", "foreign_key_list", "table_list", "database_list",
                          "collation_list", "function_list"})
WRITE_ACTIONS = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE,
                           sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_DROP_TABLE,
                           sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_DROP_INDEX,
                           sqlite3.SQLITE_ALTER_TABLE, sqlite3.SQLITE_CREATE_VIEW,
                           sqlite3.SQLITE_DROP_VIEW, sqlite3.SQLITE_CREATE_TRIGGER,
                           sqlite3.SQLITE_DROP_TRIGGER})
_VACUUM_INTO = re.compile(r"^\s*VACUUM\b.*\bINTO\b", re.I | re.S)
PROGRESS_STEPS = 2000


class SqliteBackend(SqlBackend):
    """Spider's databases in SQLite, with MySQL's exploration commands emulated."""

    name = "sqlite"
    dialect = ("SQLite 3 (MySQL's SHOW TABLES, SHOW DATABASES, SHOW COLUMNS, DESCRIBE, USE "
               "and SHOW CREATE TABLE also work; text comparison is case-insensitive)")

    def __init__(self, limits: SqlLimits | None = None, store: SqlStore | None = None) -> None:
        self.limits = limits or SqlLimits()
        self.store = store or spider_store()

    def databases(self) -> list[str]:
        """The Spider databases."""
        return self.store.names()

    def session(self) -> SqliteSession:
        """A new private session."""
        return SqliteSession(self.store, self.limits)


class SqliteSession(SqlSession):
    """One connection per database used in the episode, all in memory."""

    def __init__(self, store: SqlStore, limits: SqlLimits) -> None:
        self.store = store
        self.limits = limits
        self.current_db = ""
        self._conns: dict[str, sqlite3.Connection] = {}
        self._deadline = 0.0
        self._qualified = compat.qualified_pattern(store.databases)

    def _schema_name(self, db: str) -> str:
        """``world_1.city``: ``main.city`` in world_1; elsewhere a pristine attached copy."""
        if db == self.current_db:
            return "main"
        conn = self.conn
        attached = {row[1] for row in conn.execute("PRAGMA database_list")}
        if db not in attached:
            conn.set_authorizer(None)
            conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, len(attached))
            try:
                conn.execute(f"ATTACH ':memory:' AS {_ident(db)}")
                conn.deserialize(self.store.images[db], name=db)
            finally:
                conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, len(attached) - 1)
                conn.set_authorizer(_authorize)
        return db

    def reset(self, db: str) -> None:
        """Forget every change; start on a pristine copy of ``db``."""
        self.close()
        self._use(db)

    def _use(self, db: str) -> None:
        name = self._canonical(db)
        if name is None:
            raise KeyError(db)
        if name not in self._conns:
            self._conns[name] = self._open(name)
        self.current_db = name

    def _canonical(self, db: str) -> str | None:
        for name in self.store.images:
            if name.lower() == db.lower():
                return name
        return None

    def _open(self, name: str) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.deserialize(self.store.images[name])
        conn.execute(f"ATTACH ':memory:' AS {INFO_SCHEMA}")
        conn.deserialize(self.store.info_schema, name=INFO_SCHEMA)
        compat.register_functions(conn, lambda: self.current_db)
        conn.set_authorizer(_authorize)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 1)
        conn.set_progress_handler(self._interrupt, PROGRESS_STEPS)
        return conn

    def _interrupt(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection of the current database."""
        return self._conns[self.current_db]

    def execute(self, sql: str) -> QueryResult:
        """Run one statement (or an emulated MySQL command)."""
        if not self.current_db:
            return QueryResult(error="No database selected")
        meta = compat.parse_meta(sql)
        if meta is not None:
            return self._meta(meta)
        if _VACUUM_INTO.match(sql):
            return QueryResult(error="not authorized: VACUUM INTO writes a file")
        sql = compat.map_qualified(sql, self.store.databases, self._qualified,
                                   self._schema_name)
        self._deadline = time.monotonic() + self.limits.timeout
        try:
            cursor = self.conn.execute(sql)
            if cursor.description is None:
                return QueryResult(affected=cursor.rowcount)
            rows, capped = fetch_capped(cursor, self.limits.max_result_rows)
            columns = tuple(d[0] for d in cursor.description)
            return QueryResult(rows=rows, capped=capped, columns=columns)
        except sqlite3.Warning as exc:  # e.g. more than one statement
            return QueryResult(error=str(exc))
        except sqlite3.Error as exc:
            message = str(exc)
            if message == "interrupted":
                return QueryResult(error=f"the query was interrupted after "
                                         f"{self.limits.timeout:g} s (time limit)", timed_out=True)
            return QueryResult(error=message)
        except (OverflowError, ValueError, MemoryError) as exc:
            return QueryResult(error=f"{type(exc).__name__}: {exc}")

    def _meta(self, meta: compat.Meta) -> QueryResult:
        db = self.store.databases.get(self.current_db)
        if meta.kind == "use":
            name = meta.args[0] or ""
            if self._canonical(name) is None:
                return QueryResult(error=f"Unknown database '{name}'")
            self._use(name)
            return QueryResult(message="Database changed")
        if meta.kind == "databases":
            names = ["information_schema", *self.store.names()]
            if meta.args[0] is not None:
                rx = compat.like_to_regex(meta.args[0])
                names = [n for n in names if rx.match(n)]
            return QueryResult(rows=[(n,) for n in names])
        if meta.kind == "tables":
            return self._tables(full=bool(meta.args[0]), other=meta.args[1], like=meta.args[2])
        if meta.kind in ("columns", "describe"):
            return self._in_db(meta.args[1] if meta.kind == "columns" else None,
                               lambda conn, dbm, name: compat.describe(conn, dbm, name,
                                                                       meta.args[0] or ""))
        return compat.create_table(self.conn, db, self.current_db, meta.args[0] or "")

    def _tables(self, full: bool, other: str | None, like: str | None) -> QueryResult:
        def listing(conn: sqlite3.Connection, _db: object, _name: str) -> QueryResult:
            names = compat.table_names(conn)
            if like is not None:
                names = [n for n in names if compat.like_to_regex(like).match(n)]
            return QueryResult(rows=[(n, "BASE TABLE") if full else (n,) for n in names])
        return self._in_db(other, listing)

    def _in_db(self, other: str | None, fn) -> QueryResult:
        name = self.current_db if other is None else self._canonical(other)
        if name is None:
            return QueryResult(error=f"Unknown database '{other}'")
        if name not in self._conns:
            self._conns[name] = self._open(name)
        return fn(self._conns[name], self.store.databases.get(name), name)

    def close(self) -> None:
        """Drop every connection of the episode."""
        for conn in self._conns.values():
            conn.close()
        self._conns = {}
        self.current_db = ""


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None,
               source: str | None) -> int:
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in READ_PRAGMAS else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension":
        return sqlite3.SQLITE_DENY
    if action in WRITE_ACTIONS and (db or "").lower() == INFO_SCHEMA:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK
