"""Translate dumped MySQL tables to SQLite, and describe them as MySQL would.

Types: integers stay ``INTEGER``; ``float``, ``double`` and ``decimal`` become ``REAL``;
``char``, ``varchar`` and ``text`` become ``TEXT COLLATE NOCASE`` (MySQL's
``utf8mb4_general_ci`` compares case-insensitively); dates stay text. Keys and foreign
keys are declared (SQLite does not enforce foreign keys by default; the dump loaded
them with checks off too).
"""

from __future__ import annotations

import re

from intercode.sql.mysqldump import Column, Table

__all__ = ["column_key", "create_table_sql", "quote", "show_columns", "show_create_table"]

_INT = re.compile(r"^(tiny|small|medium|big)?int(eger)?\b")
_REAL = re.compile(r"^(float|double|real|decimal|numeric)\b")
_TEXT = re.compile(r"^(char|varchar|text|tinytext|mediumtext|longtext|enum|set)\b")


def sqlite_type(mysql_type: str) -> str:
    """The SQLite column type of a MySQL type."""
    t = mysql_type.lower()
    if _INT.match(t):
        return "INTEGER"
    if _REAL.match(t):
        return "REAL"
    if _TEXT.match(t):
        return "TEXT COLLATE NOCASE"
    return "TEXT"


def quote(name: str) -> str:
    """An SQLite identifier."""
    return '"' + name.replace('"', '""') + '"'


def create_table_sql(table: Table) -> list[str]:
    """``CREATE TABLE`` and ``CREATE INDEX`` statements for SQLite."""
    parts = []
    for col in table.columns:
        spec = f"{quote(col.name)} {sqlite_type(col.mysql_type)}"
        if not col.nullable:
            spec += " NOT NULL"
        parts.append(spec)
    if table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(quote(c) for c in table.primary_key)})")
    for cols in table.unique_keys:
        parts.append(f"UNIQUE ({', '.join(quote(c) for c in cols)})")
    for local, target, remote in table.foreign_keys:
        parts.append(f"FOREIGN KEY ({', '.join(quote(c) for c in local)}) REFERENCES "
                     f"{quote(target)} ({', '.join(quote(c) for c in remote)})")
    statements = [f"CREATE TABLE {quote(table.name)} (\n  " + ",\n  ".join(parts) + "\n)"]
    for i, cols in enumerate(table.keys):
        statements.append(f"CREATE INDEX {quote(f'{table.name}_key_{i}')} ON "
                          f"{quote(table.name)} ({', '.join(quote(c) for c in cols)})")
    return statements


def column_key(table: Table, col: Column) -> str:
    """MySQL's ``Key`` column of ``SHOW COLUMNS``: PRI, UNI, MUL or empty."""
    if col.name in table.primary_key:
        return "PRI"
    if any(keys and keys[0] == col.name and len(keys) == 1 for keys in table.unique_keys):
        return "UNI"
    indexed = [k for k in table.keys + [f[0] for f in table.foreign_keys] + table.unique_keys]
    if any(keys and keys[0] == col.name for keys in indexed):
        return "MUL"
    return ""


def show_columns(table: Table) -> list[tuple[str, str, str, str, str | None, str]]:
    """Rows of ``SHOW COLUMNS FROM t`` / ``DESCRIBE t`` as MySQL 8 returns them."""
    rows = []
    for col in table.columns:
        extra = "auto_increment" if col.auto_increment else ""
        if col.default == "CURRENT_TIMESTAMP":
            extra = "DEFAULT_GENERATED"
        rows.append((col.name, col.mysql_type, "YES" if col.nullable else "NO",
                     column_key(table, col), col.default, extra))
    return rows


def _default_sql(default: str) -> str:
    """A default as ``SHOW CREATE TABLE`` prints it: quoted, except CURRENT_TIMESTAMP."""
    if default.upper() == "CURRENT_TIMESTAMP":
        return default
    escaped = default.replace("\\", "\\\\").replace("'", "''")
    return f"'{escaped}'"


def show_create_table(table: Table) -> str:
    """A ``SHOW CREATE TABLE`` text in MySQL's style."""
    lines = []
    for col in table.columns:
        line = f"  `{col.name}` {col.mysql_type}"
        if not col.nullable:
            line += " NOT NULL"
        if col.auto_increment:
            line += " AUTO_INCREMENT"
        elif col.default is not None:
            line += f" DEFAULT {_default_sql(col.default)}"
        elif col.nullable:
            line += " DEFAULT NULL"
        lines.append(line)
    if table.primary_key:
        lines.append(f"  PRIMARY KEY ({','.join(f'`{c}`' for c in table.primary_key)})")
    for cols in table.unique_keys:
        lines.append(f"  UNIQUE KEY `{cols[0]}` ({','.join(f'`{c}`' for c in cols)})")
    for i, (local, target, remote) in enumerate(table.foreign_keys):
        lines.append(f"  CONSTRAINT `{table.name}_FK_{i}` FOREIGN KEY "
                     f"({','.join(f'`{c}`' for c in local)}) REFERENCES `{target}` "
                     f"({','.join(f'`{c}`' for c in remote)})")
    body = ",\n".join(lines)
    return (f"CREATE TABLE `{table.name}` (\n{body}\n) ENGINE=InnoDB DEFAULT "
            "CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci")
