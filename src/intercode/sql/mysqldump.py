"""Read a ``mysqldump`` file into databases, tables, column definitions and rows.

Only what ``mysqldump`` writes is understood: ``CREATE DATABASE`` / ``USE``,
``CREATE TABLE`` with one column or key per line, and ``INSERT INTO ... VALUES``
with MySQL literals (numbers, strings in single or double quotes with backslash
escapes, ``NULL``).
Everything else (``SET``, ``LOCK TABLES``, comments, users) is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from intercode.errors import DatasetError

__all__ = ["Column", "Database", "Table", "parse_dump", "split_statements"]

Value = int | float | str | None


@dataclass(frozen=True)
class Column:
    """A column as MySQL declared it (``mysql_type`` as in ``SHOW COLUMNS``)."""

    name: str
    mysql_type: str
    nullable: bool
    default: str | None = None
    auto_increment: bool = False


@dataclass
class Table:
    """A table: its columns, keys and rows."""

    name: str
    columns: list[Column]
    primary_key: list[str] = field(default_factory=list)
    unique_keys: list[list[str]] = field(default_factory=list)
    keys: list[list[str]] = field(default_factory=list)
    foreign_keys: list[tuple[list[str], str, list[str]]] = field(default_factory=list)
    rows: list[tuple[Value, ...]] = field(default_factory=list)


@dataclass
class Database:
    """A database of the dump, tables in dump order."""

    name: str
    tables: dict[str, Table] = field(default_factory=dict)


_CREATE_DB = re.compile(r"CREATE DATABASE\s+(?:IF NOT EXISTS\s+)?`([^`]+)`", re.I)
_USE = re.compile(r"USE\s+`([^`]+)`", re.I)
_CREATE_TABLE = re.compile(r"CREATE TABLE\s+`([^`]+)`\s*\((.*)\)[^)]*$", re.I | re.S)
_INSERT = re.compile(r"INSERT INTO\s+`([^`]+)`\s+VALUES\s*", re.I)
_COLUMN = re.compile(r"`([^`]+)`\s+([a-z]+(?:\([^)]*\))?(?:\s+unsigned)?)(.*)$", re.I)
_NAMES = re.compile(r"`([^`]+)`")
_DEFAULT = re.compile(r"DEFAULT\s+(?:('(?:[^'\\]|''|\\.)*')|(\S+))", re.I)
_ESCAPES = {"0": "\0", "'": "'", '"': '"', "b": "\b", "n": "\n", "r": "\r", "t": "\t",
            "Z": "\x1a", "\\": "\\", "%": "\\%", "_": "\\_"}


def parse_dump(text: str, source: str = "dump") -> dict[str, Database]:
    """Databases of a dump, by name, in dump order."""
    databases: dict[str, Database] = {}
    current: Database | None = None
    for statement in split_statements(text):
        if (m := _CREATE_DB.match(statement)) or (m := _USE.match(statement)):
            current = databases.setdefault(m.group(1), Database(m.group(1)))
        elif m := _CREATE_TABLE.match(statement):
            if current is None:
                raise DatasetError(f"{source}: CREATE TABLE {m.group(1)} before any USE")
            current.tables[m.group(1)] = _table(m.group(1), m.group(2), source)
        elif m := _INSERT.match(statement):
            if current is None or m.group(1) not in current.tables:
                raise DatasetError(f"{source}: INSERT INTO unknown table {m.group(1)}")
            table = current.tables[m.group(1)]
            rows = parse_values(statement[m.end():], f"{source}: {current.name}.{table.name}")
            for row in rows:
                if len(row) != len(table.columns):
                    raise DatasetError(f"{source}: a row of {current.name}.{table.name} has "
                                       f"{len(row)} values for {len(table.columns)} columns")
            table.rows.extend(rows)
        elif statement[:6].upper() in ("INSERT", "REPLAC"):
            raise DatasetError(f"{source}: cannot read this insert statement (only "
                               f"`INSERT INTO t VALUES ...` is supported): {statement[:80]!r}")
    return databases


def split_statements(text: str) -> list[str]:
    """Statements of a dump: split on ``;`` outside quotes, without comments."""
    statements = []
    buf: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = _end_of_quote(text, i)
            buf.append(text[i:j])
            i = j
        elif c == "-" and text.startswith("--", i) and (i + 2 >= n or text[i + 2] in " \t\n"):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == ";":
            stmt = "".join(buf).strip()
            if stmt:
                statements.append(stmt)
            buf = []
            i += 1
        else:
            j = i
            while j < n and text[j] not in "'\"`-/;":
                j += 1
            buf.append(text[i:max(j, i + 1)])
            i = max(j, i + 1)
    tail = "".join(buf).strip()
    if tail:
        statements.append(tail)
    return statements


def _end_of_quote(text: str, start: int) -> int:
    quote = text[start]
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and quote != "`":
            i += 2
            continue
        if c == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    raise DatasetError("unterminated quoted string in the dump")


def _table(name: str, body: str, source: str) -> Table:
    table = Table(name, [])
    for raw in body.split("\n"):
        line = raw.strip().rstrip(",")
        if not line:
            continue
        upper = line.upper()
        if upper.startswith("PRIMARY KEY"):
            table.primary_key = _NAMES.findall(line)
        elif upper.startswith("UNIQUE KEY"):
            table.unique_keys.append(_NAMES.findall(line)[1:])
        elif upper.startswith("KEY"):
            table.keys.append(_NAMES.findall(line)[1:])
        elif upper.startswith("CONSTRAINT"):
            names = _NAMES.findall(line)
            ref = line.upper().index("REFERENCES")
            local = _NAMES.findall(line[:ref])[1:]
            target, *remote = _NAMES.findall(line[ref:])
            table.foreign_keys.append((local, target, remote))
            del names
        elif m := _COLUMN.match(line):
            rest = m.group(3).upper()
            default = None
            if dm := _DEFAULT.search(m.group(3)):
                if dm.group(1) is not None:  # a quoted literal, with '' and \ escapes
                    default = str(_literal(dm.group(1), 0, f"{source}: table {name}")[0])
                elif dm.group(2).upper() != "NULL":
                    default = dm.group(2)
            table.columns.append(Column(name=m.group(1), mysql_type=m.group(2).lower(),
                                        nullable="NOT NULL" not in rest, default=default,
                                        auto_increment="AUTO_INCREMENT" in rest))
        else:
            raise DatasetError(f"{source}: cannot read this line of table {name}: {line!r}")
    if not table.columns:
        raise DatasetError(f"{source}: table {name} has no columns")
    return table


def parse_values(text: str, where: str) -> list[tuple[Value, ...]]:
    """Rows of ``(v, ...), (v, ...)`` with MySQL literals."""
    try:
        return _parse_values(text, where)
    except IndexError:
        raise DatasetError(f"{where}: the values end in the middle of a row") from None


def _parse_values(text: str, where: str) -> list[tuple[Value, ...]]:
    rows: list[tuple[Value, ...]] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\n,":
            i += 1
        if i >= n:
            break
        if text[i] != "(":
            raise DatasetError(f"{where}: expected '(' at offset {i} of the values")
        i += 1
        row: list[Value] = []
        while True:
            while text[i] in " \t\n":
                i += 1
            value, i = _literal(text, i, where)
            row.append(value)
            while text[i] in " \t\n":
                i += 1
            if text[i] == ",":
                i += 1
            elif text[i] == ")":
                i += 1
                break
            else:
                raise DatasetError(f"{where}: unexpected {text[i]!r} in the values")
        rows.append(tuple(row))
    return rows


_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _literal(text: str, i: int, where: str) -> tuple[Value, int]:
    quote = text[i]
    if quote in "'\"":  # MySQL reads both as string literals (without ANSI_QUOTES)
        out = []
        j = i + 1
        while True:
            c = text[j]
            if c == "\\":
                out.append(_ESCAPES.get(text[j + 1], text[j + 1]))
                j += 2
            elif c == quote:
                if text[j + 1:j + 2] == quote:
                    out.append(quote)
                    j += 2
                else:
                    return "".join(out), j + 1
            else:
                out.append(c)
                j += 1
    if text.startswith("NULL", i):
        return None, i + 4
    m = _NUMBER.match(text, i)
    if not m:
        raise DatasetError(f"{where}: unreadable value at {text[i:i + 20]!r}")
    literal = m.group(0)
    if re.fullmatch(r"-?\d+", literal):
        return int(literal), m.end()
    return float(literal), m.end()
