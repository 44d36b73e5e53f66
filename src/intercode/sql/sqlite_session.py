"""The SQLite sessions' shared part (databases by name, MySQL's commands, ``db.table``)
and the gold's session, which runs trusted dataset SQL in this process
(:class:`LocalSqliteSession`); the agent's runs in a sandbox
(:mod:`intercode.sql.sqlite_sandboxed`)."""

from __future__ import annotations

import re
import sqlite3
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

from intercode.sandbox.inbox import sqlconn, sqlrepl
from intercode.sql import mysql_compat as compat
from intercode.sql.backend import SqlLimits, SqlSession
from intercode.sql.mysqldump import Database
from intercode.sql.results import QueryResult, fetch_capped
from intercode.sql.store import SqlStore

__all__ = ["LocalSqliteSession", "SqliteSessionBase", "timeout_message"]

_VACUUM_INTO = re.compile(r"^\s*VACUUM\b.*\bINTO\b", re.I | re.S)
PROGRESS_STEPS = 2000


class SqliteSessionBase(SqlSession):
    """What both sessions share: databases by name, MySQL's commands, ``db.table``."""

    def __init__(self, store: SqlStore, limits: SqlLimits) -> None:
        self.store = store
        self.limits = limits
        self.current_db = ""

    @abstractmethod
    def _connection(self, name: str) -> Any:
        """This episode's connection to ``name`` (``execute(sql, params)`` as sqlite3's)."""

    @abstractmethod
    def _run(self, sql: str, attach: list[str]) -> QueryResult:
        """Run agent SQL in the current database, other databases attached by name."""

    @abstractmethod
    def _drop(self, db: str) -> None:
        """Forget every change of the episode; ``db`` is the next current database."""

    def reset(self, db: str) -> None:
        """Forget every change; start on a pristine copy of ``db``."""
        name = self._canonical(db)
        if name is None:
            raise KeyError(db)
        self._drop(name)
        self.current_db = name

    def _canonical(self, db: str) -> str | None:
        for name in self.store.images:
            if name.lower() == db.lower():
                return name
        return None

    def execute(self, sql: str) -> QueryResult:
        """Run one statement (or an emulated MySQL command)."""
        if not self.current_db:
            return QueryResult(error="No database selected")
        meta = compat.parse_meta(sql)
        if meta is not None:
            try:
                return self._meta(meta)
            except sqlite3.Error as exc:
                return QueryResult(error=sqlrepl.short(str(exc)))
        if _VACUUM_INTO.match(sql):
            return QueryResult(error="not authorized: VACUUM INTO writes a file")
        attach: list[str] = []

        def schema(db: str) -> str:
            """``world_1.city``: ``main.city`` in world_1; elsewhere a pristine attached copy."""
            if db == self.current_db:
                return "main"
            if db not in attach:
                attach.append(db)
            return db

        if "." in sql:
            sql = compat.map_qualified(sql, self.store.databases, schema,
                                       backslash_escapes=False)
        return self._run(sql, attach)

    def _meta(self, meta: compat.Meta) -> QueryResult:
        db = self.store.databases.get(self.current_db)
        if meta.kind == "use":
            name = self._canonical(meta.args[0] or "")
            if name is None:
                return QueryResult(error=f"Unknown database '{meta.args[0] or ''}'")
            self.current_db = name
            return QueryResult(message="Database changed")
        if meta.kind == "databases":
            names = ["information_schema", *self.store.names()]
            if meta.args[0] is not None:
                pattern = compat.like_pattern(meta.args[0])
                names = [n for n in names if compat.like_match(pattern, n)]
            return QueryResult(rows=[(n,) for n in names])
        if meta.kind == "tables":
            return self._tables(full=bool(meta.args[0]), other=meta.args[1], like=meta.args[2])
        if meta.kind in ("columns", "describe"):
            return self._in_db(meta.args[1] if meta.kind == "columns" else None,
                               lambda conn, dbm, name: compat.describe(conn, dbm, name,
                                                                       meta.args[0] or ""))
        return compat.create_table(self._connection(self.current_db), db, self.current_db,
                                   meta.args[0] or "")

    def _tables(self, full: bool, other: str | None, like: str | None) -> QueryResult:
        def listing(conn: Any, _db: object, _name: str) -> QueryResult:
            names = compat.table_names(conn, like)
            return QueryResult(rows=[(n, "BASE TABLE") if full else (n,) for n in names])
        return self._in_db(other, listing)

    def _in_db(self, other: str | None,
               fn: Callable[[Any, Database | None, str], QueryResult]) -> QueryResult:
        name = self.current_db if other is None else self._canonical(other)
        if name is None:
            return QueryResult(error=f"Unknown database '{other}'")
        return fn(self._connection(name), self.store.databases.get(name), name)


class LocalSqliteSession(SqliteSessionBase):
    """Connections in this process, one per database used: for trusted SQL only."""

    def __init__(self, store: SqlStore, limits: SqlLimits) -> None:
        super().__init__(store, limits)
        self._conns: dict[str, sqlite3.Connection] = {}
        self._deadline = 0.0

    def _connection(self, name: str) -> sqlite3.Connection:
        conn = self._conns.get(name)
        if conn is None:
            conn = sqlconn.open_image(self.store.images[name], self.store.info_schema,
                                      lambda: self.current_db)
            conn.set_progress_handler(self._interrupt, PROGRESS_STEPS)
            self._conns[name] = conn
        return conn

    def _interrupt(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _drop(self, db: str) -> None:
        self.close()
        self._connection(db)

    def _run(self, sql: str, attach: list[str]) -> QueryResult:
        conn = self._connection(self.current_db)
        self._deadline = time.monotonic() + self.limits.timeout
        try:
            for name in attach:
                sqlconn.attach_image(conn, name, self.store.images[name])
            cursor = conn.execute(sql)
            if cursor.description is None:
                return QueryResult(affected=cursor.rowcount)
            rows, capped = fetch_capped(cursor, self.limits.max_result_rows)
            columns = tuple(d[0] for d in cursor.description)
            return QueryResult(rows=rows, capped=capped, columns=columns)
        except sqlite3.Warning as exc:  # e.g. more than one statement
            return QueryResult(error=sqlrepl.short(str(exc)))
        except sqlite3.Error as exc:
            message = str(exc)
            if message == "interrupted":
                return QueryResult(error=timeout_message(self.limits.timeout), timed_out=True)
            return QueryResult(error=sqlrepl.short(message))
        except (OverflowError, ValueError, MemoryError) as exc:
            return QueryResult(error=sqlrepl.short(f"{type(exc).__name__}: {exc}"))

    def close(self) -> None:
        """Drop every connection of the episode."""
        for conn in self._conns.values():
            conn.close()
        self._conns = {}
        self.current_db = ""


def timeout_message(timeout: float) -> str:
    """The error text of a statement stopped at the time limit."""
    return f"the query was interrupted after {timeout:g} s (time limit)"
