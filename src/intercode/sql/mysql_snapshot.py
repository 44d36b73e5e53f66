"""Snapshots of a MySQL-backend session: copy databases, and the session's settings.

A snapshot copies each database the session has a private copy of into a database of
the run named ``ic_<run>_s<random>_<db>`` (made and owned by the backend's admin
account; no session account is ever granted anything on it, and the random part
keeps the names out of reach of guessing), and records the session's settings: the
session variables that differ from a fresh session's (``sql_mode``, ``time_zone``,
...) and the user variables (``@a``), with their types. A restore copies the
databases back and replays the settings on a fresh connection; a fork does the same
into another session (of the same server).

What lives only in a connection cannot be copied by another one: the open
transaction is committed by a snapshot, and temporary tables, table locks,
prepared statements and XA transactions end with the connection (a snapshot and a
restore both start a fresh one, so the branches agree). The copies are the run's
databases: they go on ``release()``, when the session closes, when the backend
closes, and, after a crash, with the run's other leftovers at the next start.
"""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from intercode.errors import SnapshotError

if TYPE_CHECKING:
    from intercode.sql.mysql_backend import MysqlBackend
    from intercode.sql.mysql_session import MysqlSession

__all__ = [
    "MAX_BYTES",
    "MAX_LIVE",
    "NO_TABLE",
    "MysqlState",
    "changed_settings",
    "copy_database",
    "inventory",
    "replay",
    "session_variables",
    "snapshot_name",
    "user_variables",
]

log = logging.getLogger(__name__)

#: Live snapshots one session may hold, and their total size (data and indexes).
MAX_LIVE = 32
MAX_BYTES = 1 << 30
#: User variables a snapshot keeps, and their total size.
MAX_USER_VARIABLES = 1000
MAX_USER_BYTES = 16 << 20
MAX_NAME = 64  # the server's limit on database names
NO_TABLE = {1109, 1146}  # unknown table (in information_schema), table does not exist

#: Session variables never replayed: of the connection or the moment, or the harness's.
UNREPLAYED = frozenset({
    "timestamp", "pseudo_thread_id", "rand_seed1", "rand_seed2", "last_insert_id",
    "insert_id", "identity", "warning_count", "error_count", "in_transaction",
    "last_gtid", "gtid_seq_no", "max_statement_time", "max_execution_time",
    "server_id", "gtid_domain_id", "sql_log_bin", "pseudo_slave_mode", "wsrep_on",
    "session_track_gtids", "proxy_user", "external_user", "autocommit",
})
_VARIABLE = re.compile(r"[a-z][a-z0-9_]*\Z")
_INTEGER = re.compile(r"-?[0-9]+\Z")
_DECIMAL = re.compile(r"-?[0-9]+\.[0-9]+\Z")


@dataclass(eq=False)
class MysqlState:
    """A session's databases (logical name → snapshot database, ``None``: the session
    had dropped its copy) and settings at one moment."""

    session: MysqlSession
    copies: dict[str, str | None]
    current_db: str
    settings: dict[str, str | None]
    variables: dict[str, Any]
    size: int = 0
    inventories: dict[str, Inventory] = field(default_factory=dict)
    released: bool = False
    ident: str = field(default_factory=lambda: secrets.token_hex(6))

    def release(self) -> None:
        """Drop the snapshot's databases (idempotent)."""
        if self.released:
            return
        self.released = True
        self.session.forget_snapshot(self)
        backend = self.session.backend
        if backend._admin is None:
            return  # the run is over: its databases went with it
        for name in self.copies.values():
            if name is not None:
                backend.query(f"DROP DATABASE IF EXISTS `{name}`")


def snapshot_name(backend: MysqlBackend, ident: str, db: str) -> str:
    """The database that holds a snapshot's copy of ``db``."""
    name = f"{backend.run_id}_s{ident}_{db.lower()}"
    if len(name) > MAX_NAME:
        raise SnapshotError(f"the database name {db!r} is too long for a snapshot copy")
    return name


#: Engines whose tables a copy may carry (a MERGE table, say, would name tables of other
#: databases: recreated by the admin, it could reach another session's copies).
ENGINES = frozenset({"innodb", "myisam", "aria", "memory", "csv"})


@dataclass(frozen=True)
class Inventory:
    """What a database holds, as far as a copy is concerned."""

    charset: str
    collation: str
    tables: tuple[tuple[str, str], ...]  # (name, its CREATE TABLE statement)
    size: int


def inventory(backend: MysqlBackend, db: str) -> Inventory | None:
    """What ``db`` holds (``None``: it does not exist); a :class:`SnapshotError` for
    what copies cannot carry (views, triggers, routines, sequences, foreign keys,
    tables of other engines or in other directories)."""
    schema = backend.query(
        "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME, "
        "(SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS "
        " WHERE CONSTRAINT_SCHEMA = %s), "
        "(SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = %s), "
        "(SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s) "
        "FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (db, db, db, db))
    if not schema:
        return None
    charset, collation, fks, triggers, routines = schema[0]
    rows = backend.query(
        "SELECT TABLE_NAME, TABLE_TYPE, LOWER(COALESCE(ENGINE, '')), "
        "COALESCE(DATA_LENGTH, 0) + COALESCE(INDEX_LENGTH, 0) "
        "FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (db,))
    others = sorted({str(kind).lower() for _n, kind, _e, _s in rows if kind != "BASE TABLE"})
    engines = sorted({f"{e} tables" for _n, kind, e, _s in rows
                      if kind == "BASE TABLE" and e not in ENGINES})
    lacking = [what for what, count in (("foreign keys", fks), ("triggers", triggers),
                                        ("stored routines", routines)) if count]
    if others or lacking or engines:
        raise SnapshotError("snapshots of the MySQL backend copy tables only; the session's "
                            f"database holds {', '.join([*others, *engines, *lacking])}")
    tables = []
    for name in sorted(str(n) for n, *_r in rows):
        create = str(backend.query(f"SHOW CREATE TABLE `{db}`.{quoted(name)}")[0][1])
        head = "CREATE TABLE " + quoted(name) + " ("
        if not create.startswith(head) or re.search(r"\b(DATA|INDEX) DIRECTORY\b", create,
                                                     re.I):
            raise SnapshotError(f"the table {name!r} cannot be copied by a snapshot")
        tables.append((name, create[len(head):]))
    return Inventory(str(charset), str(collation), tuple(tables),
                     sum(int(s) for *_r, s in rows))


def copy_database(backend: MysqlBackend, source: str, found: Inventory, target: str) -> None:
    """Make ``target`` a copy of ``source`` (whose inventory is ``found``): each table
    made from its own ``CREATE TABLE`` (indexes, checks, ``AUTO_INCREMENT`` counter)."""
    query = backend.query
    query(f"DROP DATABASE IF EXISTS `{target}`")
    query(f"CREATE DATABASE `{target}` CHARACTER SET {found.charset} "
          f"COLLATE {found.collation}")
    query("SET SESSION foreign_key_checks = 0, sql_mode = 'NO_AUTO_VALUE_ON_ZERO'")
    for table, rest in found.tables:
        name = quoted(table)
        query(f"CREATE TABLE `{target}`.{name} ({rest}")
        query(f"INSERT INTO `{target}`.{name} SELECT * FROM `{source}`.{name}")


# -- settings ------------------------------------------------------------------------


def session_variables(cur: Any) -> dict[str, str | None]:
    """The connection's session variables (name → value)."""
    cur.execute("SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE "
                "FROM information_schema.SESSION_VARIABLES")
    return {str(n): None if v is None else str(v) for n, v in cur.fetchall()}


def changed_settings(now: dict[str, str | None],
                     fresh: dict[str, str | None]) -> dict[str, str | None]:
    """The replayable variables whose value differs from a fresh session's."""
    return {n: v for n, v in now.items()
            if n not in UNREPLAYED and _VARIABLE.match(n) and fresh.get(n, v) != v}


def user_variables(cur: Any) -> dict[str, Any]:
    """The connection's user variables with their values (as the driver reads them)."""
    cur.execute("SELECT VARIABLE_NAME FROM information_schema.USER_VARIABLES")
    names = sorted(str(n) for (n,) in cur.fetchall())
    if not names:
        return {}
    if len(names) > MAX_USER_VARIABLES:
        raise SnapshotError(f"the session has {len(names)} user variables; snapshots keep "
                            f"at most {MAX_USER_VARIABLES}")
    refs = ", ".join(f"@{quoted(n)}" for n in names)
    cur.execute("SELECT " + ", ".join(f"COALESCE(LENGTH(@{quoted(n)}), 0)" for n in names))
    if sum(int(v) for v in cur.fetchone()) > MAX_USER_BYTES:
        raise SnapshotError("the session's user variables hold more than "
                            f"{MAX_USER_BYTES >> 20} MiB; snapshots do not keep that much")
    cur.execute("SELECT " + refs)
    return dict(zip(names, cur.fetchone(), strict=True))


def quoted(name: str) -> str:
    """``name`` as a quoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def _setting_literal(conn: Any, value: str | None) -> str:
    if value is None:
        return "NULL"
    if _INTEGER.match(value):
        return value
    if _DECIMAL.match(value):
        return value
    return str(conn.escape(value))


def _user_literal(conn: Any, value: Any) -> str:
    """A literal of the same type as ``value`` (a float as a DOUBLE, not a DECIMAL)."""
    if isinstance(value, float):
        text = repr(value)
        return text if "e" in text or "n" in text else text + "e0"
    if isinstance(value, Decimal):
        text = str(value)
        return text if _DECIMAL.match(text) else f"CAST({conn.escape(text)} AS DECIMAL(65, 0))"
    return str(conn.escape(value))


def replay(conn: Any, settings: dict[str, str | None], variables: dict[str, Any]) -> None:
    """Set ``settings`` and ``variables`` on ``conn`` (a fresh connection). A setting
    the server refuses is skipped (logged): it was the agent's to set."""
    with conn.cursor() as cur:
        for name, value in settings.items():
            try:
                cur.execute(f"SET SESSION {name} = {_setting_literal(conn, value)}")
            except Exception as exc:  # a server error: the setting stays at its default
                log.debug("setting %s was not replayed: %s", name, exc)
        items = list(variables.items())
        for start in range(0, len(items), 100):
            chunk = items[start:start + 100]
            cur.execute("SET " + ", ".join(f"@{quoted(n)} = {_user_literal(conn, v)}"
                                           for n, v in chunk))
