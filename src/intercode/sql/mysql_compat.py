"""MySQL's exploration commands and a few of its functions, for the SQLite backend.

Agents trained on MySQL (and InterCode's recorded trajectories) explore with ``SHOW
TABLES``, ``DESCRIBE t``, ``USE db`` and friends; these return MySQL-shaped rows here.
Table names are shown in lower case, as InterCode's server (``lower_case_table_names=1``)
showed them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from intercode.sandbox.inbox.sqlconn import register_functions
from intercode.sql.mysqldump import Database, Table
from intercode.sql.qualify import database_parts
from intercode.sql.results import QueryResult
from intercode.sql.schema import show_columns, show_create_table

__all__ = ["COMMANDS", "Meta", "create_table", "describe", "find_table", "like_match",
           "like_pattern", "like_sql", "map_qualified", "parse_meta", "register_functions",
           "table_names"]

_IDENT = r"`?([A-Za-z0-9_$]+)`?"
_FROM_DB = rf"(?:\s+(?:FROM|IN)\s+{_IDENT})?"
_LIKE = r"(?:\s+LIKE\s+'([^']*)')?"
COMMANDS: list[tuple[str, re.Pattern[str]]] = [
    ("use", re.compile(rf"^USE\s+{_IDENT}$", re.I)),
    ("databases", re.compile(rf"^SHOW\s+(?:DATABASES|SCHEMAS){_LIKE}$", re.I)),
    ("tables", re.compile(rf"^SHOW\s+(FULL\s+)?TABLES{_FROM_DB}{_LIKE}$", re.I)),
    ("columns", re.compile(rf"^SHOW\s+(?:FULL\s+)?(?:COLUMNS|FIELDS)\s+(?:FROM|IN)\s+{_IDENT}"
                           rf"{_FROM_DB}$", re.I)),
    ("describe", re.compile(rf"^(?:DESCRIBE|DESC|EXPLAIN)\s+{_IDENT}$", re.I)),
    ("create", re.compile(rf"^SHOW\s+CREATE\s+TABLE\s+{_IDENT}$", re.I)),
]


@dataclass(frozen=True)
class Meta:
    """A recognised MySQL command and its arguments."""

    kind: str
    args: tuple[str | None, ...]


def parse_meta(sql: str) -> Meta | None:
    """The MySQL exploration command ``sql`` is, if it is one."""
    text = sql.strip().rstrip(";").strip()
    for kind, pattern in COMMANDS:
        m = pattern.match(text)
        if m:
            return Meta(kind, m.groups())
    return None


_ANY, _ONE = object(), object()  # the wildcards % and _ of a parsed LIKE pattern


def like_pattern(pattern: str, fold: bool = True) -> list[object]:
    """A MySQL ``LIKE`` pattern as a list of ``_ANY``, ``_ONE`` and literal characters,
    lower-cased if ``fold`` (``\\`` escapes, as in MySQL; a trailing one stands for
    itself); runs of ``%`` are one ``_ANY``."""
    out: list[object] = []
    escaped = False
    for c in pattern:
        c = c.lower() if fold else c
        if escaped:
            out.extend(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "%":
            if not out or out[-1] is not _ANY:
                out.append(_ANY)
        else:
            out.extend([_ONE] if c == "_" else c)
    if escaped:
        out.append("\\")
    return out


def like_match(pattern: str | list[object], text: str) -> bool:
    """Whether ``text`` matches a MySQL ``LIKE`` pattern, ignoring case.

    No regular expression: a backtracking one for ``'%%…%x'`` had not ended after five
    minutes of host time. Greedy matching with one backtrack point, in at most
    ``len(text) * len(pattern)`` steps; at once when the pattern needs more characters
    than ``text`` has (so the pattern is at most ``2 * len(text) + 1`` long by then).
    """
    toks = like_pattern(pattern) if isinstance(pattern, str) else pattern
    text = text.lower()
    if sum(1 for t in toks if t is not _ANY) > len(text):
        return False
    p = s = 0
    star, mark = -1, 0
    while s < len(text):
        if p < len(toks) and toks[p] is _ANY:
            star, mark = p, s
            p += 1
        elif p < len(toks) and (toks[p] is _ONE or toks[p] == text[s]):
            p += 1
            s += 1
        elif star >= 0:
            mark += 1
            p, s = star + 1, mark
        else:
            return False
    while p < len(toks) and toks[p] is _ANY:
        p += 1
    return p == len(toks)


def like_sql(pattern: str) -> str:
    """The pattern for SQLite's ``LIKE … ESCAPE '\\'`` that matches what MySQL's does
    (SQLite's ``LIKE`` ignores the case of ASCII letters itself)."""
    out = []
    for t in like_pattern(pattern, fold=False):
        if t is _ANY:
            out.append("%")
        elif t is _ONE:
            out.append("_")
        else:
            out.append("\\" + str(t) if t in ("%", "_", "\\") else str(t))
    return "".join(out)


def table_names(conn: sqlite3.Connection, like: str | None = None) -> list[str]:
    """Tables of the current database, lower-cased and sorted as MySQL shows them;
    ``like``: only those matching that MySQL ``LIKE`` pattern (matched by the engine, which
    runs in the agent's sandbox: the names are the agent's)."""
    sql = ("SELECT name FROM main.sqlite_master WHERE type = 'table' "
           "AND name NOT LIKE 'sqlite_%'")
    if like is None:
        rows = conn.execute(sql).fetchall()
    else:
        rows = conn.execute(sql + " AND name LIKE ? ESCAPE '\\'",
                            (like_sql(like),)).fetchall()
    return sorted(r[0].lower() for r in rows)


def find_table(db: Database | None, name: str) -> Table | None:
    """A dumped table by case-insensitive name."""
    if db is None:
        return None
    for table_name, table in db.tables.items():
        if table_name.lower() == name.lower():
            return table
    return None


def describe(conn: sqlite3.Connection, db: Database | None, db_name: str,
             name: str) -> QueryResult:
    """``DESCRIBE name``: the dump's definition, or SQLite's for a table made later."""
    exists = _sqlite_table(conn, name)
    if exists is None:
        return QueryResult(error=f"Table '{db_name}.{name.lower()}' doesn't exist")
    table = find_table(db, name)
    if table is not None and [c[1] for c in _pragma_columns(conn, exists[0])] == [
            c.name for c in table.columns]:
        return QueryResult(rows=list(show_columns(table)))
    rows = []
    for _cid, col, typ, notnull, default, pk in _pragma_columns(conn, exists[0]):
        rows.append((col, (typ or "").lower(), "NO" if notnull or pk else "YES",
                     "PRI" if pk else "", default, ""))
    return QueryResult(rows=rows)


def _sqlite_table(conn: sqlite3.Connection, name: str) -> tuple[str, str] | None:
    """(name, CREATE statement) of a table, its name matched ignoring case."""
    row: tuple[str, str] | None = conn.execute(
        "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' AND "
        "lower(name) = lower(?)", (name,)).fetchone()
    return row


def _pragma_columns(conn: sqlite3.Connection, table: str) -> list[tuple[Any, ...]]:
    return conn.execute(f"PRAGMA main.table_info(\"{table.replace(chr(34), chr(34) * 2)}\")"
                        ).fetchall()


def create_table(conn: sqlite3.Connection, db: Database | None, db_name: str,
                 name: str) -> QueryResult:
    """``SHOW CREATE TABLE name``."""
    row = _sqlite_table(conn, name)
    if row is None:
        return QueryResult(error=f"Table '{db_name}.{name.lower()}' doesn't exist")
    table = find_table(db, name)
    text = show_create_table(table) if table is not None else row[1]
    return QueryResult(rows=[(row[0].lower(), text)])


def map_qualified(sql: str, databases: dict[str, Database], rename: Callable[[str], str],
                  backslash_escapes: bool = True) -> str:
    """Rewrite the ``db`` of ``db.table`` references with ``rename(db)``, read as MySQL
    reads them (:mod:`intercode.sql.qualify`): ``orchestra.Orchestra`` in an expression
    is table ``orchestra``'s column and stays; ``FROM orchestra.orchestra`` and
    ``orchestra.orchestra.Orchestra`` name database ``orchestra``. A prefix counts as a
    database only if what follows the dot is one of its tables.
    """
    canonical = {n.lower(): n for n in databases}

    def is_database(db: str, table: str) -> bool:
        name = canonical.get(db.lower())
        return name is not None and find_table(databases[name], table) is not None

    out, last = [], 0
    for tok in database_parts(sql, is_database, backslash_escapes, names=databases.keys()):
        new = rename(canonical[(tok.name or "").lower()])
        out += [sql[last:tok.start], f"`{new}`" if tok.kind == "quoted" else new]
        last = tok.start + len(tok.text)
    return "".join(out) + sql[last:]
